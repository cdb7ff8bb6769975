package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes the report as one self-contained HTML page: charts are
// SVG drawn by gonum/plot and inlined, so the page opens offline. It leads
// with cost against recall (each strategy a point with its 95% intervals),
// gives each strategy one colour in every chart and puts legends beside
// the plots, never over them. Extra bar charts (the judge's agreement,
// say) follow the recall chart.
func (r *Report) WriteHTML(w io.Writer, extra ...Chart) error {
	pal := r.palette()
	scatter, err := r.scatterChart(pal)
	if err != nil {
		return err
	}
	cost, err := r.barChart("Cost vs none (95% interval)", pal, false, func(s StrategyReport) (float64, Interval) { return s.CostVsNone, s.CI95.CostVsNone })
	if err != nil {
		return err
	}
	recall, err := r.barChart("Evidence recall v2 (95% interval; the axis starts near the lowest value)", pal, true, func(s StrategyReport) (float64, Interval) { return s.EvidenceRecall, s.CI95.Recall })
	if err != nil {
		return err
	}
	page := htmlPage{Report: r, Scatter: scatter, Cost: cost, Recall: recall}
	for _, c := range extra {
		ec, err := c.render()
		if err != nil {
			return err
		}
		page.Extra = append(page.Extra, ec)
	}
	for _, s := range r.PerSession {
		svg, err := r.contextChart(s, pal)
		if err != nil {
			return err
		}
		page.Sessions = append(page.Sessions, sessionChart{Name: filepath.Base(s.Session), Family: s.Family, Turns: s.Turns, SVG: svg})
	}
	return pageTemplate.Execute(w, page)
}

type sessionChart struct {
	Name, Family string
	Turns        int
	SVG          template.HTML
}

type htmlPage struct {
	Report                *Report
	Scatter, Cost, Recall template.HTML
	Sessions              []sessionChart
	Extra                 []extraChart
}

// strategyColors are distinguishable colours, one per strategy in report
// order (Tableau 20's dark and light pairs).
var strategyColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 0, 255}, {174, 199, 232, 255},
	{255, 152, 150, 255}, {152, 223, 138, 255}, {197, 176, 213, 255}, {196, 156, 148, 255},
}

// palette maps each strategy to its colour, the same in every chart.
func (r *Report) palette() map[string]color.Color {
	pal := make(map[string]color.Color)
	for i, s := range r.Strategies {
		pal[s.Name] = strategyColors[i%len(strategyColors)]
	}
	return pal
}

// segment is a line between two points in colour c.
func segment(c color.Color, x0, y0, x1, y1 float64) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	return l, nil
}

// scatterChart draws every strategy at (cost vs none, recall) with its
// intervals as a cross: the Pareto picture.
func (r *Report) scatterChart(pal map[string]color.Color) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = "Cost vs recall (lower right is better; bars are 95% intervals over sessions)"
	p.X.Label.Text = "cost vs none"
	p.Y.Label.Text = "evidence recall (v2)"
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	for _, s := range r.Strategies {
		c := pal[s.Name]
		x, y := s.CostVsNone, s.EvidenceRecall
		for _, seg := range [][4]float64{
			{s.CI95.CostVsNone.Low, y, s.CI95.CostVsNone.High, y},
			{x, s.CI95.Recall.Low, x, s.CI95.Recall.High},
		} {
			l, err := segment(c, seg[0], seg[1], seg[2], seg[3])
			if err != nil {
				return "", err
			}
			p.Add(l)
		}
		pt, err := plotter.NewScatter(plotter.XYs{{X: x, Y: y}})
		if err != nil {
			return "", err
		}
		pt.GlyphStyle.Color = c
		pt.GlyphStyle.Shape = draw.CircleGlyph{}
		pt.GlyphStyle.Radius = vg.Points(4.5)
		p.Add(pt)
		leg.Add(s.Name, pt)
		if s.VisibleRecall < y {
			// What the context shows as sent, with no recall round trip:
			// a hollow ring below the point, joined to it.
			l, err := segment(c, x, s.VisibleRecall, x, y)
			if err != nil {
				return "", err
			}
			l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(l)
			vis, err := plotter.NewScatter(plotter.XYs{{X: x, Y: s.VisibleRecall}})
			if err != nil {
				return "", err
			}
			vis.GlyphStyle.Color = c
			vis.GlyphStyle.Shape = draw.RingGlyph{}
			vis.GlyphStyle.Radius = vg.Points(4)
			p.Add(vis)
		}
	}
	if f := r.Frontier(); len(f) > 1 {
		// ctxkit's curve: the knob's settings joined in order of value.
		xys := make(plotter.XYs, len(f))
		for i, s := range f {
			xys[i] = plotter.XY{X: s.CostVsNone, Y: s.EvidenceRecall}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return "", err
		}
		l.Color = pal["ctxkit"]
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		leg.Add("ctxkit frontier", l)
	}
	// Room around the points so none sits on the frame.
	p.X.Min, p.X.Max = p.X.Min-0.05, p.X.Max+0.05
	p.Y.Min, p.Y.Max = p.Y.Min-0.01, p.Y.Max+0.01
	return svgLegend(p, leg, 9*vg.Inch, 5*vg.Inch)
}

// barChart draws one bar per strategy in its colour, with its interval.
func (r *Report) barChart(title string, pal map[string]color.Color, zoom bool, value func(StrategyReport) (float64, Interval)) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = title
	names := make([]string, len(r.Strategies))
	lo := math.Inf(1)
	for i, s := range r.Strategies {
		v, ci := value(s)
		names[i] = s.Name
		bars, err := plotter.NewBarChart(plotter.Values{v}, vg.Points(26))
		if err != nil {
			return "", fmt.Errorf("bench: chart %q: %w", title, err)
		}
		bars.Color = pal[s.Name]
		bars.LineStyle.Width = 0
		bars.XMin = float64(i)
		p.Add(bars)
		if ci.High > ci.Low {
			l, err := segment(color.Black, float64(i), ci.Low, float64(i), ci.High)
			if err != nil {
				return "", err
			}
			p.Add(l)
		}
		lo = min(lo, v, ci.Low)
	}
	// Start the axis near the smallest value so close figures differ
	// visibly; the axis says where it starts.
	if zoom && lo > 0.2 && !math.IsInf(lo, 1) {
		p.Y.Min = math.Floor(lo*20)/20 - 0.05
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	return svg(p, 9*vg.Inch, 3.4*vg.Inch)
}

// contextChart draws the prompt size per turn of every strategy on one
// session, with compactions crossed, TTL expiries as dotted verticals and
// the window dashed; the legend sits to the right of the plot.
func (r *Report) contextChart(s SessionReport, pal map[string]color.Color) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = "Context tokens per turn — " + filepath.Base(s.Session)
	p.X.Label.Text = "turn"
	p.Y.Label.Text = "prompt tokens"
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	peak := 0
	expired := make(map[int]bool)
	for i, run := range s.Strategies {
		xys := make(plotter.XYs, len(run.ContextPerTurn))
		for t, v := range run.ContextPerTurn {
			xys[t] = plotter.XY{X: float64(t), Y: float64(v)}
			peak = max(peak, v)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return "", err
		}
		line.Color = pal[run.Strategy]
		line.Dashes = plotutil.Dashes(i % 3)
		line.Width = vg.Points(1.2)
		p.Add(line)
		leg.Add(run.Strategy, line)
		for _, t := range run.ExpiriesAt {
			expired[t] = true
		}
		if len(run.CompactionsAt) > 0 {
			pts := make(plotter.XYs, len(run.CompactionsAt))
			for k, t := range run.CompactionsAt {
				pts[k] = xys[t]
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return "", err
			}
			sc.GlyphStyle.Color = pal[run.Strategy]
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			sc.GlyphStyle.Radius = vg.Points(4)
			p.Add(sc)
		}
	}
	top := float64(max(peak, r.Window))
	first := true
	for _, t := range sortedKeys(expired) {
		l, err := segment(color.RGBA{200, 0, 0, 255}, float64(t), 0, float64(t), top)
		if err != nil {
			return "", err
		}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		l.Width = vg.Points(0.8)
		p.Add(l)
		if first {
			leg.Add("TTL expiry", l)
			first = false
		}
	}
	if r.Window > 0 && s.Turns > 0 {
		win, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(r.Window)}, {X: float64(s.Turns - 1), Y: float64(r.Window)}})
		if err != nil {
			return "", err
		}
		win.Color = color.Gray{Y: 120}
		win.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(win)
		leg.Add("window", win)
	}
	return svgLegend(p, leg, 9*vg.Inch, 4.2*vg.Inch)
}

// legendWidth is the room kept right of a plot for its legend.
const legendWidth = 1.9 * vg.Inch

// svgLegend draws p into the left part of a w×h SVG and leg into a column
// to its right, so no legend ever covers data.
func svgLegend(p *plot.Plot, leg plot.Legend, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	leg.Draw(draw.Crop(dc, w-legendWidth+vg.Points(8), 0, 0, -vg.Points(30)))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	// Generated by gonum/plot from our own numbers and labels, which it
	// escapes; safe to inline.
	return template.HTML(buf.String()), nil
}

func svg(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	// The SVG is generated by gonum/plot from our own numbers and labels,
	// which it escapes; it is safe to inline.
	return template.HTML(buf.String()), nil
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	// ratio is a cost ratio, or a dash when the strategy it divides by
	// was not run, as the text table prints it.
	"ratio": func(f float64) string {
		if f <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f×", f)
	},
	"base": filepath.Base,
}).Parse(`{{define "rec"}}<td>{{.Responses}}</td><td>{{.Recorded.Input}} / {{.Simulated.Input}}</td><td>{{.Recorded.CacheRead}} / {{.Simulated.CacheRead}}</td><td>{{.Recorded.CacheWrite}} / {{.Simulated.CacheWrite}}</td><td>{{printf "%+.1f" .ErrorPct.Prompt}}%</td><td>{{printf "%+.1f" .ErrorPct.CacheRead}}%</td><td>{{printf "%+.1f" .ErrorPct.CacheWrite}}%</td>{{end}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ctxkit bench — {{.Report.Sessions}} session(s), window {{.Report.Window}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:90em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}td,th{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child{text-align:left}svg{max-width:100%;height:auto}.note{color:#666}
</style></head><body>
<h1>ctxkit bench</h1>
<p>{{.Report.Sessions}} session(s) · window {{.Report.Window}} tokens · pricing {{.Report.Pricing}}{{if .Report.Date}} · {{.Report.Date}}{{end}}{{if .Report.Machine}} · {{.Report.Machine}}{{end}}</p>
<figure class="chart">{{.Scatter}}</figure>
<p class="note">Filled dots: evidence recall, counting the terms a recall round trip brings back (billed). Rings: visible recall, the terms present in the context as sent.</p>
<p class="note">{{.Report.Note}}.</p>
<table id="summary"><thead><tr><th>strategy</th><th>cost $</th><th>vs none</th><th>95% interval</th><th>vs bound</th><th>recall</th><th>95% interval</th><th>visible recall</th><th>not visible: cleared · compacted · gone</th><th>recall v1</th><th>recalls</th><th>recalled again</th><th>recalls $</th><th>summaries $</th><th>peak context</th><th>turns over window</th><th>compactions</th><th>TTL expiries</th></tr></thead><tbody>
{{range .Report.Strategies}}<tr><td>{{.Name}}</td><td>{{printf "%.2f" .CostUSD}}</td><td>{{ratio .CostVsNone}}</td><td>{{printf "%.3f" .CI95.CostVsNone.Low}}–{{printf "%.3f" .CI95.CostVsNone.High}}</td><td>{{ratio .CostVsBound}}</td><td>{{pct .EvidenceRecall}}</td><td>{{pct .CI95.Recall.Low}}–{{pct .CI95.Recall.High}}</td><td>{{pct .VisibleRecall}}</td><td>{{pct .VisibleLost.Cleared}} · {{pct .VisibleLost.Compacted}} · {{pct .VisibleLost.Gone}}</td><td>{{pct .EvidenceRecallV1}}</td><td>{{.Recalls}}</td><td>{{.RecalledAgain}}</td><td>{{printf "%.2f" .RecallCostUSD}}</td><td>{{printf "%.2f" .SummaryCostUSD}}</td><td>{{.PeakContextTokens}}</td><td>{{.TurnsOverWindow}}</td><td>{{.Compactions}}</td><td>{{.TTLExpiries}}</td></tr>
{{end}}</tbody></table>
{{range .Report.Flips}}<p class="note">Ranking within the interval: {{.}}.</p>{{end}}
{{with .Report.Frontier}}{{if gt (len .) 1}}<h2>ctxkit's frontier</h2><p class="note">The knob: what keeping a token in view for one more request is worth, as a multiple of its read price. Each setting is one point of the dashed curve above. To run at one, give it to what you use: <code>ctxkit agent --keep-value V</code> (or <code>keep_value</code> in its config), <code>ctxkit serve --keep-value V</code>, <code>ctxkit compact --keep-value V</code>, or <code>engine.Config.KeepValue</code> in Go.</p>
<table id="frontier"><thead><tr><th>keep value</th><th>strategy</th><th>vs none</th><th>recall</th><th>visible recall</th><th>recalls</th><th>compactions</th></tr></thead><tbody>
{{range .}}<tr><td>{{.KeepValue}}</td><td>{{.Name}}</td><td>{{ratio .CostVsNone}}</td><td>{{pct .EvidenceRecall}}</td><td>{{pct .VisibleRecall}}</td><td>{{.Recalls}}</td><td>{{.Compactions}}</td></tr>
{{end}}</tbody></table>{{end}}{{end}}
{{with .Report.Bound}}<p class="note">bound: ${{printf "%.2f" .CostUSD}}, {{printf "%.1f" .GapPct}}% above the floor ${{printf "%.2f" .FloorUSD}} that no schedule can beat; {{.Method}}.</p>{{end}}
<h2>Cost</h2><figure class="chart">{{.Cost}}</figure>
<h2>Evidence recall</h2><figure class="chart">{{.Recall}}</figure>
{{range .Extra}}<h2>{{.Title}}</h2>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}<figure class="chart">{{.SVG}}</figure>
{{end}}{{if .Report.Families}}<h2>By agent family and session length</h2><p class="note">Cost vs none [95% interval] / recall; short sessions peak under half the window.</p>
<table id="families"><thead><tr><th>strategy</th>{{range .Report.Families}}<th>{{.Label}} ({{.Sessions}})</th>{{end}}</tr></thead><tbody>
{{$fs := .Report.Families}}{{range $i, $row := (index $fs 0).Rows}}<tr><td>{{$row.Name}}</td>{{range $fs}}{{with index .Rows $i}}<td>{{printf "%.2f" .CostVsNone}} [{{printf "%.2f" .CI95.CostVsNone.Low}}–{{printf "%.2f" .CI95.CostVsNone.High}}] / {{printf "%.2f" .Recall}}</td>{{end}}{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{with .Report.Recorded}}<h2>Recorded vs simulated usage (none)</h2><p class="note">{{.Sessions}} session(s), {{.Responses}} responses before any recorded compaction. Error = (simulated − recorded) / recorded.</p>
<table id="recorded"><thead><tr><th>session</th><th>responses</th><th>input rec / sim</th><th>cache read rec / sim</th><th>cache write rec / sim</th><th>prompt error</th><th>read error</th><th>write error</th></tr></thead><tbody>
{{range $.Report.PerSession}}{{if .Recorded}}<tr><td>{{base .Session}}</td>{{template "rec" .Recorded}}</tr>{{end}}{{end}}<tr><td>total</td>{{template "rec" .}}</tr></tbody></table>{{end}}
<h2>Context per turn</h2><p class="note">Crosses mark compactions; red dotted lines mark turns whose cache entries had expired (TTL); the dashed grey line is the window.{{if .Report.Untimed}} No timestamps in: {{range $i, $n := .Report.Untimed}}{{if $i}}, {{end}}{{base $n}}{{end}}.{{end}}</p>
{{range .Sessions}}<section><h3>{{.Name}}{{if .Family}} · {{.Family}}{{end}} ({{.Turns}} turns)</h3><figure class="chart">{{.SVG}}</figure></section>
{{end}}</body></html>
`))
