// Package summarizetest is the conformance suite for summarizers, in the
// manner of testing/slogtest: Run checks any summarize.Summarizer for what
// compaction relies on — a summary never larger than what it replaces,
// the user's requirements kept verbatim, cancellation and timeouts
// honoured.
package summarizetest
