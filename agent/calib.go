package agent

import "github.com/ctxkit/ctxkit/llm"

// measure keeps the context measure in step with the provider's counts.
// The compactor measures the context as the last reported usage plus an
// estimate of what was appended since (seed 000's A6 rule), which is exact
// right after a response but blind to blocks changed in place since:
// results moved to rung 1 or 2 free tokens the report still counts. The
// agent estimates every request it sends, learns the ratio of the
// provider's count to its estimate, and takes the freed tokens, scaled by
// that ratio, off the report.
type measure struct {
	ratio    float64 // provider tokens per estimated token, smoothed
	sent     int     // estimate of the request in flight
	reported int     // prompt + output of the last response, less what was freed since
	n        int     // messages once that response was appended
	have     bool
}

// observe records a response to a request estimated at m.sent tokens.
func (m *measure) observe(u llm.Usage, messages int) {
	if p := u.Prompt(); p > 0 && m.sent > 0 {
		r := float64(p) / float64(m.sent)
		r = min(max(r, 0.25), 4)
		if m.ratio == 0 {
			m.ratio = r
		} else {
			m.ratio = 0.5*m.ratio + 0.5*r
		}
	}
	m.reported, m.n, m.have = u.Prompt()+u.Output, messages, true
}

// free takes tokens freed before the reported point off the report and
// returns the usage to give the compactor, false when there is no report
// to correct.
func (m *measure) free(tokens int) (llm.Usage, bool) {
	if !m.have || tokens <= 0 {
		return llm.Usage{}, false
	}
	r := m.ratio
	if r == 0 {
		r = 1
	}
	m.reported = max(m.reported-int(float64(tokens)*r), 0)
	return llm.Usage{Input: m.reported}, true
}

// freed tells the compactor that tokens were freed in place.
func (a *Agent) freed(tokens int) {
	if u, ok := a.measure.free(tokens); ok {
		a.compact.Observe(u, a.measure.n)
	}
}
