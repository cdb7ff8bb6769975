// Package sdkcheck holds the test that the official Anthropic and OpenAI Go
// SDKs accept the request bodies package wire writes, field for field. It
// lives apart from wire so that fuzzing wire does not have to instrument
// the SDKs.
package sdkcheck
