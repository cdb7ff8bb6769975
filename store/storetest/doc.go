// Package storetest is the conformance suite every store.Store passes, in
// the manner of testing/slogtest: call [Run] from the implementation's
// tests with a function that opens a fresh, empty store.
package storetest
