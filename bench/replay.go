package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Session is one recorded session to replay.
type Session struct {
	Name string
	Conv *conv.Conversation
	// Family is the agent that recorded it (the importer's format name),
	// for the per-family breakdown; "" counts as "other".
	Family string
}

// Options configure a run.
type Options struct {
	Window  int
	Pricing pricing.Table
	Counter conv.Counter
	// MinCacheTokens is the shortest prefix the simulated cache stores
	// (default 1024, Sonnet-class models).
	MinCacheTokens int
	Strategies     []Factory
	// Summarize is the offline summarizer every strategy uses.
	Summarize func(ctx context.Context, msgs []conv.Message) (string, error)
	// FreeSummaries bills compactions at nothing, as the offline
	// summarizer costs (the figures before summaries were billed).
	FreeSummaries bool
	// KeepValue is the engine.Config.KeepValue of the ctxkit strategy and
	// of the serve strategy's proxy (0: the engine's default); the
	// frontier's strategies (CtxkitAt) set their own.
	KeepValue float64
}

// Turn is what one strategy sent before one recorded assistant message.
type Turn struct {
	Msg     int  `json:"msg"` // index of the assistant message in the recording
	Prompt  int  `json:"prompt_tokens"`
	Bill    Bill `json:"bill"`
	Terms   int  `json:"evidence_terms"`
	Present int  `json:"evidence_present"`
	// Visible is how many of the terms the request shows as sent, before
	// any recall round trip (Present counts those a recall brings back).
	Visible     int `json:"evidence_visible"`
	Compactions int `json:"compactions,omitempty"`
	// Recalls is 1 when the turn needed a term only a recall id gave and
	// paid one more round trip for it.
	Recalls int `json:"recalls,omitempty"`
	// Expired is true when a cache entry this turn would have read had
	// outlived its TTL.
	Expired bool `json:"ttl_expired,omitempty"`
	// CPU is the thread CPU time the strategy spent deciding this turn.
	CPU time.Duration `json:"cpu_ns"`
}

// Run is one strategy's replay of one session.
type Run struct {
	Strategy        string  `json:"strategy"`
	Session         string  `json:"session"`
	Turns           []Turn  `json:"turns"`
	Total           Bill    `json:"total"`
	SummarizerCalls int     `json:"summarizer_calls"`
	Compactions     int     `json:"compactions"`
	Peak            int     `json:"peak_context_tokens"`
	OverWindow      int     `json:"turns_over_window"`
	Recall          float64 `json:"evidence_recall"` // mean over turns with evidence; 1 when none has any
	// VisibleRecall is Recall without recall round trips: the share of a
	// turn's evidence terms the request shows as sent, mean over turns
	// with evidence.
	VisibleRecall float64 `json:"visible_recall"`
	// Lost is what VisibleRecall misses, by where the missing terms are.
	Lost        Lost    `json:"visible_lost"`
	TermTurns   int     `json:"turns_with_evidence"`
	RecallV1    float64 `json:"evidence_recall_v1"`
	TermTurnsV1 int     `json:"turns_with_evidence_v1"`
	// Floor is BoundFloor of the session, for bound's run.
	Floor float64 `json:"floor_usd,omitempty"`
	// TTLExpiries counts the turns that found a cache entry expired.
	TTLExpiries int `json:"ttl_expiries"`
	// Timestamps is false when the recording has no times, so no entry
	// could expire.
	Timestamps bool `json:"timestamps"`
	// Recalls counts the recall round trips billed.
	Recalls int `json:"recalls"`
	// RecalledAgain counts the originals a recall round trip fetched that
	// an earlier one of the session had fetched already: brought back,
	// then taken out of view again (cleared or compacted) while still
	// needed.
	RecalledAgain int `json:"recalled_again"`
	// SummaryCost is what the summary calls cost (in Total too).
	SummaryCost float64 `json:"summary_cost_usd"`
	// RecallCost is what the recall round trips cost (in Total too): each
	// the request sent once more with the recall calls and the recalled
	// originals, and the calls' output. The originals a trip leaves in
	// the conversation are billed with the later requests that carry them.
	RecallCost float64 `json:"recall_cost_usd"`
	// Invalid counts the requests the provider would refuse: broken
	// invariants, a refusal by the stand-in a proxy forwards to, or an
	// image of the recording whose data does not decode (refusedImages).
	Invalid int `json:"invalid_requests"`
	// Failed is why the strategy could not replay the session (empty when
	// it could); a failed run counts in no total.
	Failed string `json:"failed,omitempty"`
}

// Replay runs every strategy over every session, strategies side by side.
func Replay(ctx context.Context, sessions []Session, opts Options) ([]Run, error) {
	if opts.MinCacheTokens == 0 {
		opts.MinCacheTokens = 1024
	}
	type job struct {
		s Session
		f Factory
		e *Evidence
	}
	var jobs []job
	for _, s := range sessions {
		warmTokens(s.Conv, opts.Counter)
		ev := NewEvidence(s.Conv)
		for _, f := range opts.Strategies {
			jobs = append(jobs, job{s, f, ev})
		}
	}
	runs := make([]Run, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("bench: %s on %s: internal error: %v", j.f.Name, j.s.Name, p)
				}
			}()
			runs[i], errs[i] = replayOne(ctx, j.s, j.f, j.e, opts)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// One strategy's failure on one session marks that run failed; the
	// rest of the report stands.
	for i, err := range errs {
		if err != nil {
			why := strings.TrimPrefix(err.Error(), fmt.Sprintf("bench: %s on %s, ", jobs[i].f.Name, jobs[i].s.Name))
			why = strings.TrimPrefix(why, fmt.Sprintf("bench: %s on %s: ", jobs[i].f.Name, jobs[i].s.Name))
			runs[i] = Run{Strategy: jobs[i].f.Name, Session: jobs[i].s.Name, Failed: why}
		}
	}
	return runs, nil
}

// replayer is one strategy's replay of one session.
type replayer struct {
	opts  Options
	cache *Cache
	ev    *Evidence
	anch  *anchorer
	// prev is the request sent before the current one, and prevIDs its
	// block ids, to find what a compaction replaced.
	prev    *llm.Request
	prevIDs map[string]bool
	// now is when the current request was sent, from the recording's
	// timestamps (zero without them).
	now time.Time
}

// Lost splits what visible recall misses (1 − visible recall) by where
// the missing terms are: behind the recall id of a result micro cleared or
// compressed, behind one only a compaction names (its summary's recall
// index, a carried block, a truncation marker), or behind none. The first
// two are what recall round trips bring back; Gone is lost for good.
// Shares of a turn's evidence terms, mean over turns with evidence, as
// visible recall is.
type Lost struct {
	Cleared   float64 `json:"cleared"`
	Compacted float64 `json:"compacted"`
	Gone      float64 `json:"gone"`
}

// add returns l plus o scaled by w.
func (l Lost) add(o Lost, w float64) Lost {
	return Lost{Cleared: l.Cleared + w*o.Cleared, Compacted: l.Compacted + w*o.Compacted, Gone: l.Gone + w*o.Gone}
}

func replayOne(ctx context.Context, s Session, f Factory, ev *Evidence, opts Options) (Run, error) {
	// Thread CPU time needs the goroutine pinned to its thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rec := s.Conv
	env := opts.env(rec, ev)
	env.Family = s.Family
	r := newReplayer(opts, ev, env)
	refused := refusedImages(rec)
	env.Now = func() time.Time { return r.now }
	st := f.New(env)
	if c, ok := st.(io.Closer); ok {
		defer c.Close()
	}
	run := Run{Strategy: f.Name, Session: s.Name}
	var recallSum, visibleSum, recallV1Sum float64
	var lostSum Lost
	// recalled maps the ids a strategy gave recalled results to the
	// originals they hold.
	recalled := make(map[string]string)
	fetched := make(map[string]bool) // the originals recall round trips fetched
	prev := 0
	for k := range rec.Messages {
		if rec.Messages[k].Role != conv.RoleAssistant {
			continue
		}
		if err := ctx.Err(); err != nil {
			return run, err
		}
		arrived := rec.Messages[prev:k]
		prev = k
		r.now = sentAt(rec, k)
		t0 := threadCPU()
		req, info, err := st.Step(ctx, arrived)
		cpu := threadCPU() - t0
		if err != nil {
			return run, fmt.Errorf("bench: %s on %s, message %d: %w", f.Name, s.Name, k, err)
		}
		if !info.AsSent {
			req = r.anch.place(req)
		}
		if vs := conv.CheckRequest(requestConv(req)); len(vs) > 0 || info.Invalid || sendsRefused(req, refused) {
			run.Invalid++
		}
		expiries := r.cache.Expiries
		var summary Bill
		switch {
		case opts.FreeSummaries:
		case info.AsSent || info.Calls != nil:
			for _, c := range info.Calls {
				// A proxy's summary answer is the offline summarizer's, as
				// every strategy's is: billed at no less than what a model
				// writes (SummaryOutputFloor), as theirs are.
				summary = summary.Add(r.cache.BillAt(Segments(c.Request, opts.Counter), max(c.Output, SummaryOutputFloor), r.now))
			}
		case info.Compactions > 0:
			summary = r.summarize(f.Summary, arrived, req)
		}
		run.SummaryCost += summary.USD + info.Summarizer.USD
		bill := r.bill(req, k)
		// What the simulated provider reports for this request, as the
		// agent's provider reports its usage (reported below, once it is
		// known whether the model first made a recall round trip).
		sent := bill // the request alone, as the provider reports it
		report := []llm.Usage{sent.Usage(sent.Output)}
		prompt := bill.Prompt()
		bill = bill.Add(info.Summarizer).Add(summary)
		turn := Turn{Msg: k, Prompt: prompt, Bill: bill, Compactions: info.Compactions, CPU: cpu}
		last := req // the last request the provider saw this turn
		if terms := ev.Terms[k]; len(terms) > 0 {
			turn.Terms = len(terms)
			missing := ev.Missing(req, terms)
			turn.Present = len(terms) - len(missing)
			turn.Visible = turn.Present
			visibleSum += float64(turn.Visible) / float64(turn.Terms)
			alias := info.RecallIDs
			if len(recalled) > 0 {
				alias = make(map[string]string, len(recalled)+len(info.RecallIDs))
				maps.Copy(alias, recalled)
				maps.Copy(alias, info.RecallIDs)
			}
			ids, covered, compacted := ev.behind(req, missing, alias)
			lostSum = lostSum.add(Lost{
				Cleared:   float64(covered-compacted) / float64(turn.Terms),
				Compacted: float64(compacted) / float64(turn.Terms),
				Gone:      float64(len(missing)-covered) / float64(turn.Terms),
			}, 1)
			if covered > 0 {
				// The model recalls what it needs: one more round trip.
				rt, trip, msgs := r.recallTrip(req, ids, k)
				for _, id := range ids {
					if fetched[id] {
						run.RecalledAgain++
					}
					fetched[id] = true
				}
				if rc, ok := st.(RecallKeeper); ok {
					// The calls and the originals stay in the
					// conversation, as they do in the agent's: one round
					// trip serves every later turn that needs them, until
					// the strategy clears or compacts them; a recall id
					// the strategy gives a recalled result then leads
					// back to its original.
					for id, orig := range rc.Recalled(msgs, ids) {
						recalled[id] = orig
					}
					last = trip
					// The request was answered by the recall calls and
					// the round trip's request by the recorded answer:
					// the provider reports each so. (The bill puts the
					// recorded output on the request and the calls' on
					// the trip; the sum is the same.)
					report = []llm.Usage{sent.Usage(rt.Output), rt.Usage(sent.Output)}
				}
				turn.Bill = turn.Bill.Add(rt)
				bill = bill.Add(rt)
				run.RecallCost += rt.USD
				turn.Present += covered
				turn.Recalls = 1
				run.Recalls++
			}
			recallSum += float64(turn.Present) / float64(turn.Terms)
			run.TermTurns++
		}
		if terms := ev.TermsV1[k]; len(terms) > 0 {
			recallV1Sum += float64(ev.RecallV1(req, terms)) / float64(len(terms))
			run.TermTurnsV1++
		}
		if o, ok := st.(Observer); ok {
			for _, u := range report {
				o.Observe(u)
			}
		}
		turn.Expired = r.cache.Expiries > expiries
		run.Turns = append(run.Turns, turn)
		run.Total = run.Total.Add(bill)
		run.SummarizerCalls += info.SummarizerCalls
		run.Compactions += info.Compactions
		run.Peak = max(run.Peak, turn.Prompt)
		if turn.Prompt > opts.Window {
			run.OverWindow++
		}
		r.sent(last)
	}
	if f.Name == "bound" {
		run.Floor = BoundFloor(env)
	}
	run.TTLExpiries = r.cache.Expiries
	run.Timestamps = !sentAt(rec, len(rec.Messages)-1).IsZero()
	run.Recall, run.VisibleRecall, run.RecallV1 = 1, 1, 1
	if run.TermTurns > 0 {
		run.Recall = recallSum / float64(run.TermTurns)
		run.VisibleRecall = visibleSum / float64(run.TermTurns)
		run.Lost = Lost{}.add(lostSum, 1/float64(run.TermTurns))
	}
	if run.TermTurnsV1 > 0 {
		run.RecallV1 = recallV1Sum / float64(run.TermTurnsV1)
	}
	return run, nil
}

// recallTrip is the round trip of turn k, whose model first calls the
// recall tool for ids, one call each in one message: the request again
// with those calls and the recalled originals as their results, and the
// short output of the calls. It returns the bill, the request and the two
// messages the trip adds; result i of the second holds original ids[i].
func (r *replayer) recallTrip(req *llm.Request, ids []string, k int) (Bill, *llm.Request, []conv.Message) {
	calls := conv.Message{Role: conv.RoleAssistant}
	results := conv.Message{Role: conv.RoleUser}
	for i, id := range ids {
		in, _ := json.Marshal(map[string]string{"id": id})
		callID := fmt.Sprintf("recall-%d-%d", k, i)
		call := conv.NewToolUse(callID, toolresult.DefaultRecallTool, in)
		call.ID = callID + "-call"
		res := conv.NewToolResult(callID, toolresult.DefaultRecallTool, r.ev.original(id), false)
		res.ID = callID + "-result"
		calls.Blocks = append(calls.Blocks, call)
		results.Blocks = append(results.Blocks, res)
	}
	msgs := []conv.Message{calls, results}
	trip := &llm.Request{System: req.System, Tools: req.Tools, Messages: append(slices.Clone(req.Messages), msgs...)}
	return r.cache.BillAt(Segments(anchoredRequest(trip), r.opts.Counter), recallOutputTokens, r.now), trip, msgs
}

func newReplayer(opts Options, ev *Evidence, env Env) *replayer {
	return &replayer{opts: opts, cache: NewCache(opts.Pricing, opts.MinCacheTokens), ev: ev, anch: newAnchorer(env)}
}

// bill prices req, sent before recorded assistant message k, with the
// recorded output.
func (r *replayer) bill(req *llm.Request, k int) Bill {
	out := &r.ev.rec.Messages[k]
	r.now = sentAt(r.ev.rec, k)
	return r.cache.BillAt(Segments(req, r.opts.Counter), conv.MessageTokens(out, r.opts.Counter), r.now)
}

// sentAt is when the request answered by assistant message k was sent, as
// near as the recording says: the first timestamp of message k, or the
// newest before it; zero when the recording has none.
func sentAt(rec *conv.Conversation, k int) time.Time {
	for _, b := range rec.Messages[k].Blocks {
		if !b.Meta.CreatedAt.IsZero() {
			return b.Meta.CreatedAt
		}
	}
	for i := k - 1; i >= 0; i-- {
		if t := newestTime(rec.Messages[i : i+1]); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// sent records req as the last request sent.
func (r *replayer) sent(req *llm.Request) {
	r.prev = req
	r.prevIDs = make(map[string]bool)
	for i := range req.Messages {
		for _, b := range req.Messages[i].Blocks {
			r.prevIDs[b.ID] = true
		}
	}
}

// summarize bills the summary calls of a step that compacted: the
// conversation before it is the previous request plus what arrived; the
// summary's length is that of the summary blocks the request gained.
func (r *replayer) summarize(kind SummaryRequest, arrived []conv.Message, req *llm.Request) Bill {
	pre := &llm.Request{System: req.System, Tools: req.Tools}
	if r.prev != nil {
		pre.System, pre.Tools = r.prev.System, r.prev.Tools
		pre.Messages = slices.Clone(r.prev.Messages)
	}
	pre.Messages = append(pre.Messages, arrived...)
	output := 0
	for _, b := range newSummaries(r.prevIDs, req) {
		// The recall index is the ladder's, not the model's: it is
		// billed as input of the next request, not as output here.
		output += r.opts.Counter.Count(compact.WithoutIndex(b.Text))
	}
	return r.summaryBills(kind, pre, replaced(pre.Messages, req), output)
}

// warmTokens counts every block and tool of the recording once, before
// the jobs that share it start: token counts are cached in the blocks on
// first use, and concurrent first uses would race.
func warmTokens(rec *conv.Conversation, counter conv.Counter) {
	if counter == nil {
		return
	}
	for i := range rec.System {
		conv.BlockTokens(&rec.System[i], counter)
	}
	for i := range rec.Tools {
		conv.ToolTokens(&rec.Tools[i], counter)
	}
	for i := range rec.Messages {
		conv.MessageTokens(&rec.Messages[i], counter)
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// percentile returns the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// env is what a strategy replaying rec is built with. The recording's tool
// schemas are sent as they are: the importer fills in the ones a format does
// not record.
func (o Options) env(rec *conv.Conversation, ev *Evidence) Env {
	return Env{
		System: rec.System, Tools: rec.Tools, Window: o.Window, Counter: o.Counter,
		Pricing: o.Pricing, Recording: rec, Evidence: ev, Summarize: o.Summarize,
		MinCacheTokens: o.MinCacheTokens, KeepValue: o.KeepValue, opts: o,
	}
}
