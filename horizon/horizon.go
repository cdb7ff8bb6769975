package horizon

// DefaultConfidence is the probability with which a session is expected
// to reach the horizon a lossy step must pay back within.
const DefaultConfidence = 0.9

// Requests returns the horizon of a session that has made n requests: the
// number of further requests it makes with probability at least
// confidence under the Lindy prior, n·(1−P)/P. A confidence outside (0, 1)
// means DefaultConfidence.
func Requests(n int, confidence float64) float64 {
	if confidence <= 0 || confidence >= 1 {
		confidence = DefaultConfidence
	}
	if n <= 0 {
		return 0
	}
	return float64(n) * (1 - confidence) / confidence
}
