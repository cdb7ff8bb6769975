package microtest_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/micro/microtest"
	"github.com/ctxkit/ctxkit/pricing"
)

// Every policy micro ships passes the suite, with and without a cache.
func TestPolicies(t *testing.T) {
	for _, p := range []micro.Policy{
		micro.Eager{},
		micro.Batched{},
		micro.Batched{AtLeast: 1},
		micro.CacheAware{Pricing: pricing.Anthropic()},
		micro.CacheAware{Pricing: pricing.OpenAI()},
		micro.CacheAware{Pricing: pricing.NoCache()},
	} {
		t.Run(p.Name(), func(t *testing.T) { microtest.TestPolicy(t, p) })
	}
}
