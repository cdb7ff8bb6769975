// Package horizon predicts how many more requests a session will make,
// for the policies that pay now to save later (package micro's clearing,
// package compact's schedule).
//
// How long a session goes on is not known in advance. The prior is
// Lindy's: a session that has made n requests makes at least x more with
// probability n/(n+x) (the longer it has run, the longer it is expected
// to run; the tail is heavy, so the mean is no guide, a quantile is). The
// horizon a decision trusts is the number of requests the session makes
// with probability at least P:
//
//	n/(n+x) ≥ P  ⇔  x ≤ n·(1−P)/P
//
// A step that pays for itself within that horizon pays with probability
// at least P. Lossy steps on a session that never comes near the window
// have nothing but cost to win, so "do no harm" asks for a high P:
// DefaultConfidence, 0.9, the horizon n/9. (At P = 2/3, the horizon n/2,
// a clearing predicted to pay back within 10 requests on a 21-request
// session that ended two requests later cost 8.5% more than sending
// everything.)
//
// Nine times in ten is not every time, so a step is also staked only out
// of what the session has saved so far against sending everything
// (Covered; the engine keeps that account): a session that ends right
// after a step has still cost no more than sending everything would have.
package horizon
