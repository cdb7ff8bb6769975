package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/chromium"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// TestStatusPageInChromium renders the status page of a proxy that has
// served two sessions in headless Chromium, with every other network
// access cut off, and checks the sessions and totals are on the page. With
// CTXKIT_SCREENSHOT set, the screenshot is written there (docs/).
func TestStatusPageInChromium(t *testing.T) {
	bin := chromium.Find(t, "the status page renders")
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	turnsOf(t, p, up, sim{name: "status-a", resultSize: 4000, say: 1200}, "9f1c2a7e-3b4d-4e5f-8a6b-7c8d9e0f1a2b", 1, 24)
	turnsOf(t, p, up, sim{name: "status-b", resultSize: 2500, say: 600}, "0d3e5f71-aaaa-4bbb-8ccc-1234567890ab", 1, 12)

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	flags := chromium.Flags(dir)
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", p.URL+"/")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	tenant := tenantOf(t, p.store, testKey)
	for _, want := range []string{"ctxkit serve", fingerprint(tenant + "/cc:9f1c2a7e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"),
		fingerprint(tenant + "/cc:0d3e5f71-aaaa-4bbb-8ccc-1234567890ab"), "dollars saved", "<table"} {
		if !strings.Contains(string(dom), want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	// No session id, whole or in part, and no tenant.
	for _, leak := range []string{"9f1c2a7e-3b4d", "0d3e5f71-aaaa", tenant} {
		if strings.Contains(string(dom), leak) {
			t.Errorf("the page shows %q", leak)
		}
	}
	if strings.Contains(string(dom), "http://") && strings.Contains(string(dom), "<link") {
		t.Errorf("the page loads external assets")
	}
	shot := filepath.Join(dir, "status.png")
	flags[len(flags)-1] = "--user-data-dir=" + filepath.Join(dir, "profile2")
	out, err := exec.CommandContext(ctx, bin, append(flags, "--screenshot="+shot, "--window-size=1600,420", p.URL+"/")...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot missing or blank: %v\n%s", err, out)
	}
	if dst := os.Getenv("CTXKIT_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
