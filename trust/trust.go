package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/outfile"
)

// Key is the user-config key listing the trusted workspaces.
const Key = "trusted_workspaces"

// guarded are the settings a workspace file may set only when trusted.
var guarded = []string{
	"provider", "base_url", "headers", "proxy", "env_allow",
	"permissions", "permission_mode", "sandbox", "sandbox_write", Key,
}

// Guarded reports whether a config key decides where requests and
// credentials go, what runs, or what the agent may do unasked: the keys an
// untrusted workspace may not set. Unknown keys that look like such
// settings (URLs, headers, proxies, commands, hooks, environment) are
// guarded too, so that a future setting is safe by default.
func Guarded(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(guarded, k) {
		return true
	}
	for _, w := range []string{"url", "header", "proxy", "command", "cmd", "hook", "env", "exec", "shell", "endpoint", "host"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Store is the user's config file, where trusted workspaces are listed.
type Store struct {
	// Path is the user's config file ($CTXKIT_HOME/config.json).
	Path string
}

// Canonical is the form a workspace path is remembered in: absolute, with
// symbolic links resolved.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Trusted reports whether the user trusts the workspace dir.
func (s Store) Trusted(dir string) (bool, error) {
	list, _, err := s.load()
	if err != nil {
		return false, err
	}
	c, err := Canonical(dir)
	if err != nil {
		return false, err
	}
	return slices.Contains(list, c), nil
}

// Add records that the user trusts the workspace dir, keeping every other
// setting of the config file as it is.
func (s Store) Add(dir string) error {
	list, raw, err := s.load()
	if err != nil {
		return err
	}
	c, err := Canonical(dir)
	if err != nil {
		return err
	}
	if slices.Contains(list, c) {
		return nil
	}
	list = append(list, c)
	enc, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if raw == nil {
		raw = map[string]json.RawMessage{}
	}
	raw[Key] = enc
	data, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := outfile.Write(s.Path, append(data, '\n'), outfile.Options{}); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	return nil
}

// load reads the trusted list and the whole file.
func (s Store) load() ([]string, map[string]json.RawMessage, error) {
	data, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("trust: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("trust: %s is not a JSON object", s.Path)
	}
	var list []string
	if v, ok := raw[Key]; ok {
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, nil, fmt.Errorf("trust: %s: %q must be a list of folder paths", s.Path, Key)
		}
	}
	return list, raw, nil
}
