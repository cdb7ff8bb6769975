package chromium

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Find returns a headless-capable Chromium, failing under CI (which
// installs it) and skipping elsewhere when there is none.
func Find(t testing.TB, what string) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH under CI; .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium on PATH: install Debian's chromium package to check " + what)
	return ""
}

// Flags are the headless flags, with a profile in dir and every
// non-loopback request sent to a dead proxy.
func Flags(dir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--proxy-server=127.0.0.1:9", "--user-data-dir=" + filepath.Join(dir, "profile")}
}
