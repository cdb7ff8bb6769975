package secret

import (
	"encoding/json"

	"bytes"
	"github.com/ctxkit/ctxkit/conv"
	"slices"
	"strings"
	"testing"
)

func TestLooks(t *testing.T) {
	for _, n := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "NPM_TOKEN", "MY_SECRET", "DB_PASSWORD", "PGPASSWORD",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET", "SSH_PRIVATE_KEY", "stripe_api_key"} {
		if !Looks(n) {
			t.Errorf("Looks(%q) = false", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "AWS_REGION", "AWS_PROFILE", "GOPATH", "TERM", "CTXKIT_HOME", "TOKENIZERS_PARALLELISM", "KEYBOARD"} {
		if Looks(n) {
			t.Errorf("Looks(%q) = true", n)
		}
	}
}

func TestEnv(t *testing.T) {
	env := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-ant-123456789", "GITHUB_TOKEN=ghp_abcdefgh", "NPM_TOKEN=npm_12345678", "HOME=/h"}
	kept, removed := Env(env, []string{"NPM_TOKEN"})
	if want := []string{"PATH=/bin", "NPM_TOKEN=npm_12345678", "HOME=/h"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if want := []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
}

func TestRedactor(t *testing.T) {
	r := FromEnv([]string{"ANTHROPIC_API_KEY=sk-ant-123456789", "SHORT_TOKEN=abc", `DB_PASSWORD=pa"ss\word99`, "PATH=/usr/bin/long/enough"})
	in := `key sk-ant-123456789 and {"p":"pa\"ss\\word99"} and abc and /usr/bin/long/enough`
	got := r.String(in)
	want := `key [redacted ANTHROPIC_API_KEY] and {"p":"[redacted DB_PASSWORD]"} and abc and /usr/bin/long/enough`
	if got != want {
		t.Errorf("String = %q\nwant     %q", got, want)
	}
	if b := r.Bytes([]byte(in)); string(b) != want {
		t.Errorf("Bytes = %q", b)
	}
	var buf bytes.Buffer
	r.Writer(&buf).Write([]byte("log sk-ant-123456789\n"))
	if strings.Contains(buf.String(), "sk-ant") {
		t.Errorf("Writer leaked: %q", buf.String())
	}
	var nilR *Redactor
	if nilR.String("x") != "x" || !nilR.Empty() {
		t.Errorf("nil Redactor")
	}
}

func TestMessage(t *testing.T) {
	r := FromEnv([]string{"OPENAI_API_KEY=sk-proj-abcdef123"})
	m := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewText(conv.SourceUser, "plain"),
		conv.NewToolResult("t1", "Bash", "OPENAI_API_KEY=sk-proj-abcdef123", false),
	}}
	m.Blocks[1].Structured = json.RawMessage(`{"stdout":"sk-proj-abcdef123"}`)
	got := r.Message(m)
	data, _ := json.Marshal(got)
	if strings.Contains(string(data), "sk-proj") {
		t.Errorf("redacted message still holds the key: %s", data)
	}
	orig, _ := json.Marshal(m)
	if !strings.Contains(string(orig), "sk-proj") {
		t.Errorf("Message changed its argument")
	}
}
