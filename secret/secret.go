package secret

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// providerKeys are the variables ctxkit itself reads keys from.
var providerKeys = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}

// cloudNames are credential variables of the cloud providers' tools that
// the suffix rules below miss.
var cloudNames = []string{
	"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
	"AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_STORAGE_KEY", "AZURE_STORAGE_CONNECTION_STRING",
	"AZURE_CLIENT_CERTIFICATE_PATH", "ARM_CLIENT_SECRET", "ARM_ACCESS_KEY",
}

// awsPublic are AWS_ variables that hold no credential.
var awsPublic = []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_OUTPUT", "AWS_PAGER", "AWS_CONFIG_FILE", "AWS_SDK_LOAD_CONFIG"}

// Looks reports whether an environment variable's name says it holds a
// credential.
func Looks(name string) bool {
	n := strings.ToUpper(name)
	switch {
	case slices.Contains(providerKeys, n), slices.Contains(cloudNames, n):
		return true
	case strings.HasPrefix(n, "AWS_"):
		return !slices.Contains(awsPublic, n)
	case strings.Contains(n, "PASSWORD"), strings.Contains(n, "PASSWD"):
		return true
	}
	for _, suf := range []string{"_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_KEY", "_PRIVATE_KEY", "_CREDENTIALS", "_AUTH"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return n == "TOKEN" || n == "SECRET" || n == "API_KEY"
}

// Env returns environ without the variables Looks names, except those in
// allow (names, compared exactly), and the names it removed.
func Env(environ []string, allow []string) (kept, removed []string) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if Looks(name) && !slices.Contains(allow, name) {
			removed = append(removed, name)
			continue
		}
		kept = append(kept, kv)
	}
	return kept, removed
}

// minValue is the shortest value worth redacting: shorter ones ("1",
// "true") would mangle ordinary text.
const minValue = 8

// Redactor replaces known secret values in text. The zero value and nil
// redact nothing.
type Redactor struct {
	pairs []pair // longest value first
}

type pair struct {
	value, json []byte
	name        string
}

// FromEnv is a Redactor for the values of every variable in environ that
// Looks names, the allowed ones included: a secret the user lets commands
// see still stays out of logs and transcripts.
func FromEnv(environ []string) *Redactor {
	r := &Redactor{}
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if Looks(name) {
			r.Add(name, v)
		}
	}
	return r
}

// Add makes r redact value, naming it name. Values shorter than 8 bytes
// are ignored.
func (r *Redactor) Add(name, value string) {
	if len(strings.TrimSpace(value)) < minValue {
		return
	}
	for _, p := range r.pairs {
		if string(p.value) == value {
			return
		}
	}
	enc, _ := json.Marshal(value)
	r.pairs = append(r.pairs, pair{value: []byte(value), json: enc[1 : len(enc)-1], name: name})
	sort.SliceStable(r.pairs, func(i, j int) bool { return len(r.pairs[i].value) > len(r.pairs[j].value) })
}

// Empty reports whether r knows no value.
func (r *Redactor) Empty() bool { return r == nil || len(r.pairs) == 0 }

// String returns s with every known value replaced.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	for _, p := range r.pairs {
		if strings.Contains(s, string(p.value)) {
			s = strings.ReplaceAll(s, string(p.value), mark(p.name))
		}
		if !bytes.Equal(p.json, p.value) && strings.Contains(s, string(p.json)) {
			s = strings.ReplaceAll(s, string(p.json), mark(p.name))
		}
	}
	return s
}

// Bytes returns b with every known value replaced, also in its JSON
// string form; b itself is not changed. It returns b when nothing matched.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() {
		return b
	}
	out := b
	for _, p := range r.pairs {
		for _, v := range [][]byte{p.value, p.json} {
			if bytes.Contains(out, v) {
				out = bytes.ReplaceAll(out, v, []byte(mark(p.name)))
			}
		}
	}
	return out
}

// Contains reports whether s holds a known value.
func (r *Redactor) Contains(s string) bool {
	return !r.Empty() && r.String(s) != s
}

func mark(name string) string { return "[redacted " + name + "]" }

// Writer returns a writer that redacts each Write before passing it to w.
// A value split across two writes is not caught; callers write whole
// records (log lines, reports).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r.Empty() {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	mu sync.Mutex
	r  *Redactor
	w  io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
