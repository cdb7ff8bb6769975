package bench

import (
	"slices"
)

func familyOf(s Session) string {
	if s.Family == "" {
		return "other"
	}
	return s.Family
}

// breakdown fills the intervals over all sessions and the per-family and
// per-length groups. It needs none's runs (the cost is relative to none).
func (r *Report) breakdown(runs []Run, sessions []Session, opts Options) {
	pos := make(map[string]int)
	for i, s := range sessions {
		pos[s.Name] = i
	}
	byKey := make(map[[2]string]Run)
	for _, run := range runs {
		byKey[[2]string{run.Strategy, run.Session}] = run
	}
	var names []string
	for _, f := range opts.Strategies {
		names = append(names, f.Name)
	}
	if !slices.Contains(names, "none") || len(sessions) == 0 {
		return
	}
	figs := make(map[string][]sessionFig)
	for _, n := range names {
		fs := make([]sessionFig, len(sessions))
		for i, s := range sessions {
			run, none := byKey[[2]string{n, s.Name}], byKey[[2]string{"none", s.Name}]
			fs[i] = sessionFig{cost: run.Total.USD, none: none.Total.USD, recall: run.Recall, turns: run.TermTurns}
		}
		figs[n] = fs
	}
	// A session some strategy failed on is left out of every group, so all
	// strategies are compared on the same sessions.
	var all []int
	for i, s := range sessions {
		if !slices.ContainsFunc(names, func(n string) bool { return byKey[[2]string{n, s.Name}].Failed != "" }) {
			all = append(all, i)
		}
	}
	var g Group
	if len(all) > 0 {
		g = group("all", "all", names, figs, all)
		for i := range r.Strategies {
			if j := slices.IndexFunc(g.Rows, func(row GroupRow) bool { return row.Name == r.Strategies[i].Name }); j >= 0 {
				r.Strategies[i].CI95 = g.Rows[j].CI95
			}
		}
	}
	if len(all) < len(sessions) {
		// Some strategy failed somewhere: each strategy's own interval is
		// over the sessions it and none completed, so one failure wipes
		// no other strategy's interval.
		for i := range r.Strategies {
			n := r.Strategies[i].Name
			var own []int
			for k, s := range sessions {
				if byKey[[2]string{n, s.Name}].Failed == "" && byKey[[2]string{"none", s.Name}].Failed == "" {
					own = append(own, k)
				}
			}
			r.Strategies[i].CI95 = CI95{}
			if len(own) > 0 {
				r.Strategies[i].CI95 = group("all", "all", []string{n}, figs, own).Rows[0].CI95
			}
		}
	}
	r.Flips = g.Flips
	if len(all) == 0 {
		return
	}
	var families []string
	members := make(map[string][]int)
	for _, i := range all {
		f := familyOf(sessions[i])
		if _, ok := members[f]; !ok {
			families = append(families, f)
		}
		members[f] = append(members[f], i)
	}
	slices.Sort(families)
	for _, f := range families {
		r.Families = append(r.Families, group("family", f, names, figs, members[f]))
	}
	var short, long []int
	for _, i := range all {
		if byKey[[2]string{"none", sessions[i].Name}].Peak < opts.Window/2 {
			short = append(short, i)
		} else {
			long = append(long, i)
		}
	}
	if len(short) > 0 {
		r.Families = append(r.Families, group("length", "short (peak < 50% of the window)", names, figs, short))
	}
	if len(long) > 0 {
		r.Families = append(r.Families, group("length", "long (peak ≥ 50% of the window)", names, figs, long))
	}
}

// Recorded is the usage a recording says the provider billed, next to what
// the simulator bills for none over the same responses: those of the
// first epoch (before the recorded agent's own first compaction, after
// which it sent less than none does).
type Recorded struct {
	// Family is set on the per-family totals.
	Family    string   `json:"family,omitempty"`
	Sessions  int      `json:"sessions"`
	Responses int      `json:"responses"`
	Recorded  Bill     `json:"recorded"`
	Simulated Bill     `json:"simulated"`
	ErrorPct  ErrorPct `json:"error_pct"`
}

// ErrorPct is (simulated − recorded) / recorded in percent, per kind of
// token and for the whole prompt.
type ErrorPct struct {
	// ReadShareRecorded and ReadShareSimulated are the share of the prompt
	// read from the cache: the simulator's cache behaviour, independent of
	// prompt bytes the recording does not hold (a system prompt and tool
	// schemas it never saved).
	ReadShareRecorded  float64 `json:"read_share_recorded"`
	ReadShareSimulated float64 `json:"read_share_simulated"`
	Prompt             float64 `json:"prompt"`
	Input              float64 `json:"input"`
	CacheRead          float64 `json:"cache_read"`
	CacheWrite         float64 `json:"cache_write"`
	Output             float64 `json:"output"`
}

func pct(sim, rec int) float64 {
	if rec == 0 {
		return 0
	}
	return round(100 * float64(sim-rec) / float64(rec))
}

func (rc *Recorded) finish() {
	rc.ErrorPct = ErrorPct{
		Prompt: pct(rc.Simulated.Prompt(), rc.Recorded.Prompt()), Input: pct(rc.Simulated.Input, rc.Recorded.Input),
		CacheRead: pct(rc.Simulated.CacheRead, rc.Recorded.CacheRead), CacheWrite: pct(rc.Simulated.CacheWrite, rc.Recorded.CacheWrite),
		Output: pct(rc.Simulated.Output, rc.Recorded.Output),
	}
	if p := rc.Recorded.Prompt(); p > 0 {
		rc.ErrorPct.ReadShareRecorded = round(float64(rc.Recorded.CacheRead) / float64(p))
	}
	if p := rc.Simulated.Prompt(); p > 0 {
		rc.ErrorPct.ReadShareSimulated = round(float64(rc.Simulated.CacheRead) / float64(p))
	}
}

// RecordedByFamily totals the per-session recorded figures by agent
// family: the providers' usage semantics differ (Anthropic reports cache
// writes, OpenAI does not), so only a family's own total is comparable.
func RecordedByFamily(per []SessionReport) []Recorded {
	var out []Recorded
	idx := make(map[string]int)
	for _, s := range per {
		rc := s.Recorded
		if rc == nil {
			continue
		}
		i, ok := idx[s.Family]
		if !ok {
			i = len(out)
			idx[s.Family] = i
			out = append(out, Recorded{Family: s.Family})
		}
		t := &out[i]
		t.Sessions++
		t.Responses += rc.Responses
		t.Recorded = t.Recorded.Add(rc.Recorded)
		t.Simulated = t.Simulated.Add(rc.Simulated)
	}
	for i := range out {
		out[i].finish()
	}
	return out
}

// recorded fills the per-session and total recorded-vs-simulated figures.
func (r *Report) recorded(runs []Run, sessions []Session) {
	none := make(map[string]Run)
	for _, run := range runs {
		if run.Strategy == "none" {
			none[run.Session] = run
		}
	}
	total := &Recorded{}
	for i, s := range sessions {
		run, ok := none[s.Name]
		if !ok {
			continue
		}
		end := len(s.Conv.Messages)
		if len(s.Conv.Epochs) > 0 {
			end = s.Conv.Epochs[0]
		}
		rc := &Recorded{Sessions: 1}
		for _, t := range run.Turns {
			u := s.Conv.Messages[t.Msg].Usage
			if u == nil || t.Msg >= end {
				continue
			}
			rc.Responses++
			rc.Recorded = rc.Recorded.Add(Bill{Input: u.Input, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Output: u.Output})
			rc.Simulated = rc.Simulated.Add(t.Bill)
		}
		if rc.Responses == 0 {
			continue
		}
		rc.finish()
		r.PerSession[i].Recorded = rc
		total.Sessions++
		total.Responses += rc.Responses
		total.Recorded = total.Recorded.Add(rc.Recorded)
		total.Simulated = total.Simulated.Add(rc.Simulated)
	}
	if total.Sessions > 0 {
		total.finish()
		r.Recorded = total
	}
}

// BoundNote states how bound was found and its gap to the floor.
type BoundNote struct {
	Method   string  `json:"method"`
	CostUSD  float64 `json:"cost_usd"`
	FloorUSD float64 `json:"floor_usd"`
	// GapPct is how much above the floor bound is, in percent: the most
	// the bounded search can have missed.
	GapPct float64 `json:"gap_pct"`
}

func (r *Report) boundNote(runs []Run, opts Options) {
	if !slices.ContainsFunc(opts.Strategies, func(f Factory) bool { return f.Name == "bound" }) {
		return
	}
	n := &BoundNote{Method: "bounded search over batch schedules (never, every k turns, reducible-token thresholds, then single-point removal), each billed exactly as the replay bills"}
	for _, run := range runs {
		if run.Strategy == "bound" {
			n.CostUSD += run.Total.USD
			n.FloorUSD += run.Floor
		}
	}
	if n.FloorUSD > 0 {
		n.GapPct = round(100 * (n.CostUSD - n.FloorUSD) / n.FloorUSD)
	}
	r.Bound = n
}
