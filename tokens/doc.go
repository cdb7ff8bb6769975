// Package tokens counts tokens: a fast conservative estimator for hot
// paths, exact counters for OpenAI's encodings, and a per-model calibrator
// that corrects estimates with the usage a provider reports.
//
// Every counter here has the method Count(string) int, so it satisfies
// conv.Counter without this package importing conv.
package tokens
