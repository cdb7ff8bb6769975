package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/chromium"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestHTMLRendersInChromium opens the report in headless Chromium with the
// network cut off and checks the charts are in the rendered page — visible
// recall, and ctxkit's frontier (its curve over the knob's settings and
// their table) among them — and a screenshot is drawn.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium.Find(t, "the HTML report renders")
	rec := recording()
	opts := Options{
		Window: 1000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1,
		Strategies: append(Strategies(), CtxkitAt(0.75), CtxkitAt(4)),
		Summarize:  func(_ context.Context, msgs []conv.Message) (string, error) { return "summary", nil },
	}
	sessions := []Session{{Name: "tiny", Conv: rec}}
	runs, err := Replay(context.Background(), sessions, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewReport(runs, sessions, opts).WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shot := filepath.Join(dir, "shot.png")
	flags := chromium.Flags(dir)
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, want := range []string{"<svg", `id="summary"`, "Context tokens per turn", "Cost vs recall", "95% interval", "bound",
		"visible recall", `id="frontier"`, "ctxkit frontier", "ctxkit v=0.75"} {
		if !strings.Contains(string(dom), want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if out, err := exec.CommandContext(ctx, bin, append(flags, "--screenshot="+shot, "--window-size=1200,1600", "file://"+page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot missing or blank: %v", err)
	}
}
