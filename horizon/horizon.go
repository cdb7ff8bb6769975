package horizon

// DefaultConfidence is the probability with which a session is expected
// to reach the horizon a lossy step must pay back within.
const DefaultConfidence = 0.9

// Covered reports whether a step that costs stake at once, beyond what the
// request carrying it saves (price × tokens), may be taken by a session
// that has saved saved so far against sending everything (the same units):
// should the session end right after, it has still cost no more. A step
// the request carrying it pays for (stake ≤ 0) is always covered.
func Covered(stake, saved float64) bool { return stake <= max(saved, 0) }

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
