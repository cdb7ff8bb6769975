package llm

import (
	"math/rand/v2"
	"time"
)

// Retry says how a provider retries a failed attempt: a rate limit (429),
// an overloaded or failing server (529, 5xx), a connection that could not
// be made or broke off, a stream cut mid-way, or a server silent past the
// attempt timeout. Authentication failures, rejected requests and
// prompt-too-long are never retried. The zero value means the defaults.
type Retry struct {
	// Attempts is the number of tries in all, the first included; 0 means 6.
	Attempts int
	// Base is the wait before the second try, doubled for each further
	// one up to Max, less up to a fifth of random jitter; 0 means 1s.
	Base time.Duration
	// Max caps the doubling; 0 means 30s.
	Max time.Duration
	// MaxWait is the longest retry-after a server may ask for; asked for
	// more, the provider gives up at once rather than hang. 0 means 2m.
	MaxWait time.Duration
}

// WithDefaults returns r with its zero fields set to the defaults.
func (r Retry) WithDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 6
	}
	if r.Base <= 0 {
		r.Base = time.Second
	}
	if r.Max <= 0 {
		r.Max = 30 * time.Second
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 2 * time.Minute
	}
	return r
}

// Backoff is the wait before try number n+1 (n ≥ 1 tries have failed) when
// the server did not say how long to wait.
func (r Retry) Backoff(n int) time.Duration {
	r = r.WithDefaults()
	d := r.Base
	for i := 1; i < n && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	// Jitter spreads out clients that failed together.
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}
