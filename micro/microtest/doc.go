// Package microtest is the conformance suite for micro-compaction
// policies, in the manner of testing/slogtest: TestPolicy runs any
// micro.Policy through a micro.Clearer over generated conversations,
// appended message by message as an agent produces them, and checks after
// every step the guarantees micro makes whatever the policy decides.
package microtest
