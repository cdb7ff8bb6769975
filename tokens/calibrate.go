package tokens

import (
	"math"
	"sync"
)

// CalibratorConfig sets how a Calibrator learns. Zero fields take the
// defaults.
type CalibratorConfig struct {
	// Initial is the ratio before the first observation. Default 1.
	Initial float64
	// Min and Max bound the ratio. Defaults 1 and 3.
	//
	// Min is 1 by default because the estimator is tuned to be slightly
	// above o200k_base, and Claude's tokenizers produce more tokens than
	// o200k_base, not fewer: a ratio below 1 would mostly undo the margin
	// that keeps budgets safe. Set Min below 1 (for example 0.8) for a
	// provider whose tokenizer is known to be denser than o200k_base.
	Min, Max float64
	// Weight is how much each observation moves the ratio, between 0 and
	// 1 (an exponential moving average). Default 0.3. The first
	// observation sets the ratio outright.
	Weight float64
}

func (c CalibratorConfig) withDefaults() CalibratorConfig {
	if c.Min <= 0 {
		c.Min = 1
	}
	if c.Max <= 0 {
		c.Max = 3
	}
	if c.Max < c.Min {
		c.Max = c.Min
	}
	if c.Initial <= 0 {
		c.Initial = 1
	}
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.Weight <= 0 || c.Weight > 1 {
		c.Weight = 0.3
	}
	return c
}

// A Calibrator corrects the estimator toward one model's tokenizer. After
// each response, Observe takes the prompt size the provider reported and
// the estimate of the request that was sent, and keeps a smoothed ratio of
// the two. Estimate then applies the seeds' rule (A6): the next prompt is
// the last reported prompt plus the estimate of what was added since,
// scaled by the ratio.
//
// A Calibrator is safe for concurrent use.
type Calibrator struct {
	mu       sync.Mutex
	cfg      CalibratorConfig
	ratio    float64
	observed int
}

// NewCalibrator returns a Calibrator for one model.
func NewCalibrator(cfg CalibratorConfig) *Calibrator {
	cfg = cfg.withDefaults()
	return &Calibrator{cfg: cfg, ratio: cfg.Initial}
}

// PromptTokens returns the size of a prompt as a provider reports it in
// parts: uncached input, input written to the cache, input read from it.
func PromptTokens(input, cacheWrite, cacheRead int) int {
	return max(input, 0) + max(cacheWrite, 0) + max(cacheRead, 0)
}

// Observe records that a request estimated at estimate tokens was billed as
// actual prompt tokens (see PromptTokens), and returns the new ratio.
// Observations without both numbers positive are ignored.
func (c *Calibrator) Observe(actual, estimate int) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if actual <= 0 || estimate <= 0 {
		return c.ratio
	}
	r := min(max(float64(actual)/float64(estimate), c.cfg.Min), c.cfg.Max)
	if c.observed == 0 {
		c.ratio = r
	} else {
		c.ratio += c.cfg.Weight * (r - c.ratio)
	}
	c.observed++
	return c.ratio
}

// Ratio returns the current ratio of provider tokens to estimated tokens.
func (c *Calibrator) Ratio() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ratio
}

// Observations returns how many observations the ratio rests on.
func (c *Calibrator) Observations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observed
}

// Scale returns estimate corrected by the ratio, rounded up.
func (c *Calibrator) Scale(estimate int) int {
	if estimate <= 0 {
		return 0
	}
	return int(math.Ceil(c.Ratio()*float64(estimate) - 1e-9))
}

// Estimate returns the expected prompt size of the next request: lastUsage,
// the prompt tokens the provider reported for the last one, plus the
// corrected estimate of newEstimate, the tokens added since.
func (c *Calibrator) Estimate(lastUsage, newEstimate int) int {
	return max(lastUsage, 0) + c.Scale(newEstimate)
}

// Calibrators holds one Calibrator per model.
type Calibrators struct {
	mu  sync.Mutex
	cfg CalibratorConfig
	m   map[string]*Calibrator
}

// NewCalibrators returns an empty set whose calibrators use cfg.
func NewCalibrators(cfg CalibratorConfig) *Calibrators {
	return &Calibrators{cfg: cfg, m: map[string]*Calibrator{}}
}

// For returns the calibrator of model, creating it on first use.
func (cs *Calibrators) For(model string) *Calibrator {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.m[model]
	if c == nil {
		c = NewCalibrator(cs.cfg)
		cs.m[model] = c
	}
	return c
}
