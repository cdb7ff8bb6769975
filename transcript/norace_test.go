//go:build !race

package transcript_test

const raceEnabled = false
