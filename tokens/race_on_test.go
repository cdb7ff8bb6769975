//go:build race

package tokens

// raceEnabled skips the corpus accuracy check: the exact tokenizer is slow
// under the race detector, and the check is about numbers, not races.
const raceEnabled = true
