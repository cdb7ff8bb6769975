package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	clientTok   *prometheus.CounterVec
	upstreamTok *prometheus.CounterVec
	cacheRead   *prometheus.CounterVec
	cacheWrite  *prometheus.CounterVec
	saved       *prometheus.GaugeVec
	compactions *prometheus.CounterVec
	clears      *prometheus.CounterVec
	recalls     *prometheus.CounterVec
	failOpen    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	overWindow  *prometheus.CounterVec
	// answer counts the requests whose max_tokens the engine lowered.
	answer     *prometheus.CounterVec
	resent     *prometheus.CounterVec
	admitted   *prometheus.CounterVec
	storeBytes prometheus.Gauge
	pruned     prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ctxkit", Subsystem: "serve", Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.requests = f("requests_total", "Requests proxied, by provider, endpoint and outcome (applied, unchanged, passthrough, fail_open, rejected).", "provider", "endpoint", "outcome")
	m.clientTok = f("client_tokens_total", "Estimated input tokens in the requests clients sent.", "provider")
	m.upstreamTok = f("upstream_tokens_total", "Estimated input tokens in the requests sent upstream.", "provider")
	m.cacheRead = f("upstream_cache_read_tokens_total", "Cache-read input tokens the upstream reported.", "provider")
	m.cacheWrite = f("upstream_cache_write_tokens_total", "Cache-write input tokens the upstream reported.", "provider")
	m.saved = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ctxkit", Subsystem: "serve", Name: "saved_dollars",
		Help: "Dollars the sessions saved against sending everything, by the engine's account (engine.Engine.Saved): what the requests did not read, less what clearings, compactions and recall round trips cost. It can go down."}, []string{"provider"})
	m.reg.MustRegister(m.saved)
	m.compactions = f("compactions_total", "Summaries written, by method (model, extractive, truncation), and runs dropped behind a marker (dropped).", "method")
	m.clears = f("clears_total", "Tool results cleared to a placeholder.", "provider")
	m.recalls = f("recalls_total", "Recall tool calls seen in client requests.", "provider")
	m.errors = f("errors_total", "Requests answered with an error, by provider and status: the upstream's (4xx, 5xx) or the proxy's own 502 (upstream unreachable, engine failed under --fail-closed). They are counted here, not as sessions' requests.", "provider", "status")
	m.failOpen = f("fail_open_total", "Requests forwarded unchanged because the engine failed on them.", "provider", "reason")
	m.overWindow = f("over_window_total", "Requests sent upstream over the window's hard limit (compact.Budget.Limit, estimated) because nothing was left to cut: a system prompt and tools over it, or thinking and images alone.", "provider")
	m.resent = f("resent_total", "Requests the upstream refused for their size, sent again once as the engine retried them at the sizes the refusal stated (the window from then on, a compaction, or a lower max_tokens), before anything reached the client.", "provider")
	m.answer = f("max_tokens_lowered_total", "Requests whose max_tokens (max_completion_tokens, max_output_tokens) was lowered to the room the window leaves after the prompt the engine decided: the API would have refused them as sent.", "provider")
	m.admitted = f("newest_message_cut_total", "Blocks of the newest user message cut to head and tail because one alone was over the oversize guard (micro.Guard: 25,000 tokens, or a quarter of a smaller window; its original stored, its recall id in its place).", "provider")
	m.compactions.WithLabelValues("dropped") // the method of rung 4's truncation marker
	for _, p := range []string{providerAnthropic, providerOpenAI, providerGemini} {
		m.overWindow.WithLabelValues(p) // read 0, not absent, until one happens
		m.answer.WithLabelValues(p)
		m.resent.WithLabelValues(p)
	}
	m.storeBytes = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ctxkit", Subsystem: "serve", Name: "store_bytes",
		Help: "Size of the store (the SQLite file's pages, or ctxkit's tables in PostgreSQL), as of the last retention run."})
	m.pruned = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ctxkit", Subsystem: "serve", Name: "pruned_rows_total",
		Help: "Rows deleted by retention (--retain): sessions, decisions, summaries, originals and usage past it."})
	m.reg.MustRegister(m.storeBytes, m.pruned)
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "ctxkit", Subsystem: "serve", Name: "added_latency_seconds",
		Help:    "Time the proxy spent before sending a request upstream (summaries excluded).",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25},
	}, []string{"provider"})
	m.reg.MustRegister(m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
