package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/chromium"
	"github.com/ctxkit/ctxkit/store"
)

// TestStatusPageFits1200 renders the status page at its widest (long
// model names, eight-digit counts, errors) in headless Chromium at 1200
// px: the page does not scroll sideways (issue 24 row 17).
func TestStatusPageFits1200(t *testing.T) {
	bin := chromium.Find(t, "the status page fits 1200 px")
	big := store.Totals{Requests: 12_345_678, ClientTokens: 98_765_432_109, UpstreamTokens: 45_678_901_234, CacheRead: 87_654_321_098,
		CacheWrite: 12_345_678_901, SavedUSD: 123_456.78, Clears: 1_234_567, Compactions: 123_456, FailOpen: 12_345}
	var sessions []store.Session
	for i := range 20 {
		sessions = append(sessions, store.Session{ID: strings.Repeat("x", i+1), Model: "claude-opus-4-6-20261101-with-a-long-suffix", Totals: big,
			Updated: time.Now().Add(-time.Duration(i) * 37 * time.Hour)})
	}
	var page strings.Builder
	if err := statusPage.Execute(&page, statusData{Window: 1_000_000, Host: "127.0.0.1:8788", Sessions: sessions, T: big, Errors: 123_456}); err != nil {
		t.Fatal(err)
	}
	probe := `<script>document.body.setAttribute("data-overflow", String(document.documentElement.scrollWidth - document.documentElement.clientWidth))</script></body>`
	html := strings.Replace(page.String(), "</body>", probe, 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "status.html")
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, bin, append(chromium.Flags(dir), "--window-size=1200,900", "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	m := regexp.MustCompile(`data-overflow="(-?\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not run:\n%.2000s", dom)
	}
	if string(m[1]) != "0" {
		t.Errorf("at 1200 px the page scrolls sideways by %s px", m[1])
	}
}
