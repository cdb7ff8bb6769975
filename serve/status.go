package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/textfmt"
)

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"num": func(n int64) string { return textfmt.Thousands(int(n)) },
	"usd": func(f float64) string { return fmt.Sprintf("$%.2f", f) },
	"pct": func(a, b int64) string {
		if a <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(a-b)/float64(a))
	},
	"ago": func(t time.Time) string { return ago(time.Since(t)) },
	"fp":  fingerprint,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctxkit serve</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}
p.sub{color:#666;margin:0 0 1.5em}
.cards{display:flex;gap:1em;margin-bottom:1.5em;flex-wrap:wrap}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;min-width:9em}
.card b{display:block;font-size:1.5em}
table{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:.35em .4em;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6;font-weight:600;white-space:normal;vertical-align:bottom}
td.model{white-space:normal;overflow-wrap:anywhere;min-width:8em}
td:first-child,th:first-child,td:nth-child(2),th:nth-child(2){text-align:left}
td.id{font-family:ui-monospace,monospace}
.empty{color:#888;padding:2em 0}
</style></head><body>
<h1>ctxkit serve</h1>
<p class="sub">Context engineering proxy · {{if .Window}}window {{num .Window}} tokens{{else}}each model's window{{end}}{{if .KeepValue}} · keep value {{.KeepValue}}{{end}} · {{len .Sessions}} recent session{{if ne (len .Sessions) 1}}s{{end}}</p>
<div class="cards">
<div class="card">requests<b>{{num .T.Requests}}</b></div>
<div class="card">tokens sent by clients<b>{{num .T.ClientTokens}}</b></div>
<div class="card">tokens sent upstream<b>{{num .T.UpstreamTokens}}</b></div>
<div class="card">saved<b>{{pct .T.ClientTokens .T.UpstreamTokens}}</b></div>
<div class="card">dollars saved (est.)<b>{{usd .T.SavedUSD}}</b></div>
<div class="card" title="Answered with an error — the upstream's status, or the proxy's own 502 when the upstream is unreachable — since this proxy started; not counted as requests">errors<b>{{num .Errors}}</b></div>
</div>
{{if .Sessions}}<table>
<thead><tr><th>session</th><th>model</th><th>requests</th><th>client tokens</th><th>upstream tokens</th><th>saved</th>
<th>cache read</th><th>cache write</th><th>$ saved</th><th>clears</th><th>compactions</th><th>fail-open</th><th>last request</th></tr></thead>
<tbody>{{range .Sessions}}<tr><td class="id">{{fp .ID}}</td><td class="model">{{.Model}}</td><td>{{num .Totals.Requests}}</td>
<td>{{num .Totals.ClientTokens}}</td><td>{{num .Totals.UpstreamTokens}}</td><td>{{pct .Totals.ClientTokens .Totals.UpstreamTokens}}</td>
<td>{{num .Totals.CacheRead}}</td><td>{{num .Totals.CacheWrite}}</td><td>{{usd .Totals.SavedUSD}}</td><td>{{num .Totals.Clears}}</td>
<td>{{num .Totals.Compactions}}</td><td>{{num .Totals.FailOpen}}</td><td>{{ago .Updated}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="empty">No sessions yet. Point your agent at this proxy: <code>export ANTHROPIC_BASE_URL=http://{{.Host}}</code></p>{{end}}
</body></html>
`))

// ago says how long ago in one short phrase ("4 min ago", "3 h ago"), so
// that the table's last column stays narrow.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// fingerprint names a stored session on the status page without giving
// its id away (the id is what would let someone else's request join the
// session): 8 hex digits of a hash of the tenant-scoped id.
func fingerprint(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:4])
}

// status shows totals and each recent session's numbers: no session ids,
// no content, no tenant.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	sessions, err := s.root.Sessions(ctx, 100)
	if err != nil {
		s.log.Warn("status page: reading sessions", "err", err)
		http.Error(w, "ctxkit serve: the store cannot be read (see the log)", http.StatusServiceUnavailable)
		return
	}
	var t store.Totals
	for _, x := range sessions {
		t.Requests += x.Totals.Requests
		t.ClientTokens += x.Totals.ClientTokens
		t.UpstreamTokens += x.Totals.UpstreamTokens
		t.SavedUSD += x.Totals.SavedUSD
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	statusPage.Execute(w, statusData{Window: int64(s.cfg.Window), KeepValue: s.cfg.KeepValue, Host: r.Host, Sessions: sessions, T: t, Errors: s.errs.Load()})
}

// statusData is what the status page shows.
type statusData struct {
	Window int64
	// KeepValue is the knob the proxy runs at, when not the default.
	KeepValue float64
	Host      string
	Sessions  []store.Session
	T         store.Totals
	Errors    int64 // requests answered with an error since the proxy started
}
