package bench

import (
	"context"
	"fmt"
	"html/template"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// This file holds the hooks the judge package (the model-judged consistency
// test) needs from the replay and the HTML report.

// RequestsAt replays session s through each of opts.Strategies, as Replay
// does, and returns the request each strategy built before the recorded
// assistant messages whose indices are listed in at: result[strategy][index].
// The requests are deep copies, safe to change. Indices that are not
// assistant messages are ignored; the replay stops after the last one asked
// for.
func RequestsAt(ctx context.Context, s Session, opts Options, at []int) (map[string]map[int]*llm.Request, error) {
	if opts.MinCacheTokens == 0 {
		opts.MinCacheTokens = 1024
	}
	rec := s.Conv
	want := make(map[int]bool, len(at))
	last := -1
	for _, k := range at {
		if k >= 0 && k < len(rec.Messages) && rec.Messages[k].Role == conv.RoleAssistant {
			want[k] = true
			last = max(last, k)
		}
	}
	ev := NewEvidence(rec)
	out := make(map[string]map[int]*llm.Request, len(opts.Strategies))
	for _, f := range opts.Strategies {
		st := f.New(opts.env(rec, ev))
		reqs := make(map[int]*llm.Request, len(want))
		prev := 0
		for k := 0; k <= last; k++ {
			if rec.Messages[k].Role != conv.RoleAssistant {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			arrived := rec.Messages[prev:k]
			prev = k
			req, _, err := st.Step(ctx, arrived)
			if err != nil {
				return nil, fmt.Errorf("bench: %s on %s, message %d: %w", f.Name, s.Name, k, err)
			}
			if want[k] {
				reqs[k] = cloneRequest(req)
			}
		}
		out[f.Name] = reqs
	}
	return out, nil
}

// cloneRequest deep-copies req: strategies change their state's blocks in
// place after a step, and the request shares them.
func cloneRequest(req *llm.Request) *llm.Request {
	c := *req
	c.System = conv.CloneBlocks(req.System)
	c.Tools = slices.Clone(req.Tools)
	c.Messages = make([]conv.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Blocks = conv.CloneBlocks(m.Blocks)
		c.Messages[i] = m
	}
	return &c
}

// Chart is an extra bar chart for the HTML report (WriteHTML's extra
// arguments): one bar per name.
type Chart struct {
	Title  string
	Note   string
	Names  []string
	Values []float64
	// YLabel names the values' unit; empty for none.
	YLabel string
}

type extraChart struct {
	Title, Note string
	SVG         template.HTML
}

func (c Chart) render() (extraChart, error) {
	if len(c.Names) != len(c.Values) {
		return extraChart{}, fmt.Errorf("bench: chart %q: %d names for %d values", c.Title, len(c.Names), len(c.Values))
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.YLabel
	if len(c.Values) > 0 {
		bars, err := plotter.NewBarChart(plotter.Values(c.Values), vg.Points(28))
		if err != nil {
			return extraChart{}, fmt.Errorf("bench: chart %q: %w", c.Title, err)
		}
		bars.Color = plotutil.Color(2)
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.NominalX(c.Names...)
		p.X.Tick.Label.Rotation = 0.5
		p.X.Tick.Label.XAlign = draw.XRight
	}
	s, err := svg(p, 7*vg.Inch, 3.2*vg.Inch)
	if err != nil {
		return extraChart{}, err
	}
	return extraChart{Title: c.Title, Note: c.Note, SVG: s}, nil
}
