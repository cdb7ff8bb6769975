package engine

import (
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/tokens"
)

// measure keeps the compactor's measure of the context in step with the
// provider's counts. The compactor measures the context as the last
// reported usage plus an estimate of what was appended since (seed 000's
// A6 rule), which is exact right after a response but blind to blocks
// changed in place since: results moved to rung 1 or 2 free tokens the
// report still counts. The engine estimates every request it builds, lets
// a tokens.Calibrator learn the ratio of the provider's count to that
// estimate, and takes the freed tokens, scaled by the ratio, off the
// report.
type measure struct {
	cal      *tokens.Calibrator
	sent     int // estimate of the request in flight
	reported int // prompt + output of the last response, less what was freed since
	n        int // messages once that response was appended
	have     bool
}

// observe records a response to a request estimated at m.sent tokens.
func (m *measure) observe(u llm.Usage, messages int) {
	m.cal.Observe(u.Prompt(), m.sent)
	m.reported, m.n, m.have = u.Prompt()+u.Output, messages, true
}

// free takes tokens freed before the reported point off the report and
// returns the usage to give the compactor, false when there is no report
// to correct.
func (m *measure) free(n int) (llm.Usage, bool) {
	if !m.have || n <= 0 {
		return llm.Usage{}, false
	}
	m.reported = max(m.reported-m.cal.Scale(n), 0)
	return llm.Usage{Input: m.reported}, true
}

// freed tells the compactor that n tokens were freed in place.
func (e *Engine) freed(n int) {
	if u, ok := e.measure.free(n); ok {
		e.compact.Observe(u, e.measure.n)
	}
}
