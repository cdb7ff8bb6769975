// Package tokens counts tokens: a fast conservative estimator for the hot
// path, exact counters for OpenAI's encodings, and a calibrator that
// corrects estimates with the prompt sizes a provider reports.
//
// Every counter here has the method Count(string) int, so it satisfies
// conv.Counter without this package importing anything of ctxkit's.
//
//   - [Estimator] splits text the way o200k_base's pre-tokenizer does and
//     charges each piece from tables fitted to o200k_base, consulting a
//     compact Bloom filter of o200k_base's word tokens. It knows code,
//     prose, JSON and CJK apart by construction: what it charges depends on
//     letters, case, digits, punctuation and whitespace runs, and for CJK on
//     whether a character or a run of two to four is one token. It errs
//     high by a few percent and, on the recorded sessions and the seeds,
//     never falls more than 5% below o200k_base (see accuracy_test.go).
//   - [Exact] counts exactly for o200k_base and cl100k_base through
//     github.com/tiktoken-go/tokenizer, with the vocabularies compiled in.
//   - [Calibrator] keeps a smoothed ratio of a model's reported prompt
//     tokens to the estimate of what was sent, and applies the rule
//     next = last reported usage + ratio × estimate of what was added.
//
// Claude's tokenizers are not public and produce more tokens than
// o200k_base (about 15–35%); the calibrator learns that ratio per model
// from each response's usage.
package tokens
