package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGuarded(t *testing.T) {
	for _, k := range []string{"base_url", "provider", "headers", "proxy", "env_allow", "permission_mode", "permissions", "sandbox", "sandbox_write", "apiKeyHelper_command", "pre_hook", "OPENAI_BASE_URL"} {
		if !Guarded(k) {
			t.Errorf("Guarded(%q) = false", k)
		}
	}
	for _, k := range []string{"model", "window", "max_tokens", "max_turns", "summarizer", "policy", "keep_value"} {
		if Guarded(k) {
			t.Errorf("Guarded(%q) = true", k)
		}
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s := Store{Path: filepath.Join(dir, "home", "config.json")}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Trusted(ws); ok || err != nil {
		t.Fatalf("Trusted before Add = %v, %v", ok, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path, []byte(`{"model":"m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ws); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ws, link, ws + "/."} {
		if ok, err := s.Trusted(p); !ok || err != nil {
			t.Errorf("Trusted(%s) = %v, %v", p, ok, err)
		}
	}
	if ok, _ := s.Trusted(dir); ok {
		t.Errorf("the parent folder is trusted too")
	}
	data, _ := os.ReadFile(s.Path)
	if !strings.Contains(string(data), `"model": "m"`) {
		t.Errorf("Add lost the other settings: %s", data)
	}
	if fi, _ := os.Stat(s.Path); fi.Mode().Perm() != 0o600 {
		t.Errorf("Add changed the config's mode to %v", fi.Mode().Perm())
	}
}
