package llmtest

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n%s", name, got)
	}
}

// TestWireGolden pins the answers' wire format: the event sequence of a
// stream and the JSON of a whole response, for each API.
func TestWireGolden(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	reply := Reply{Thinking: "Check the file first.", Text: "Reading main.go now.", Calls: []ToolCall{Use("Read", `{"path":"main.go"}`)}}
	cases := []struct {
		name string
		api  API
		body string
	}{
		{"anthropic-stream.golden", Anthropic, anthBody(`[`+userHi+`]`, `"stream":true`)},
		{"anthropic-json.golden", Anthropic, anthBody(`[` + userHi + `]`)},
		{"openai-stream.golden", OpenAI, oaiBody(`[`+oUser+`]`, `"stream":true`, `"stream_options":{"include_usage":true}`)},
		{"openai-json.golden", OpenAI, oaiBody(`[` + oUser + `]`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(t, Config{Chunk: 8, Now: now})
			srv.Enqueue(reply)
			status, data := post(t, srv, tc.api, tc.body, false)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, data)
			}
			golden(t, tc.name, data)
		})
	}
}

func TestFaultAnswers(t *testing.T) {
	cases := []struct {
		fault      Fault
		anth, oai  int
		retryAfter string
	}{
		{Fault{Kind: RateLimited, RetryAfter: 2 * time.Second}, 429, 429, "2"},
		{Fault{Kind: RateLimited, RetryAfter: 20 * time.Millisecond}, 429, 429, "0.02"},
		{Fault{Kind: RateLimited}, 429, 429, ""},
		{Fault{Kind: Overloaded, RetryAfter: time.Second}, 529, 503, "1"},
		{Fault{Kind: ServerError}, 500, 500, ""},
		{Fault{Kind: Unauthorized}, 401, 401, ""},
		{Fault{Kind: Forbidden}, 403, 403, ""},
	}
	for _, tc := range cases {
		for _, api := range []API{Anthropic, OpenAI} {
			t.Run(tc.fault.Kind.String()+"/"+api.String(), func(t *testing.T) {
				srv := NewServer(t, Config{})
				srv.Enqueue(Fail(tc.fault))
				body := anthBody(`[` + userHi + `]`)
				want := tc.anth
				path := "/v1/messages"
				if api == OpenAI {
					body, want, path = oaiBody(`[`+oUser+`]`), tc.oai, "/v1/chat/completions"
				}
				req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
				req.Header.Set("Anthropic-Version", "2023-06-01")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("status = %d, want %d", resp.StatusCode, want)
				}
				if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
					t.Errorf("retry-after = %q, want %q", got, tc.retryAfter)
				}
				if !bytes.Contains(data, []byte(`"error":{`)) || !bytes.Contains(data, []byte(`"message":`)) {
					t.Errorf("error body has the wrong shape: %s", data)
				}
				if c := srv.Last(); c.Fault != tc.fault.Kind || c.Status != want || c.Error == "" {
					t.Errorf("call recorded as %+v", c)
				}
			})
		}
	}
}

// TestCutStream checks that a cut stream really breaks the connection, so
// that clients see an error rather than a short but clean response.
func TestCutStream(t *testing.T) {
	srv := NewServer(t, Config{})
	srv.Enqueue(Reply{Text: "cut short", Fault: &Fault{Kind: CutStream, Events: 2}})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(anthBody(`[`+userHi+`]`, `"stream":true`)))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("read the whole body without an error: %s", data)
	}
	if !bytes.Contains(data, []byte("message_start")) || bytes.Contains(data, []byte("message_stop")) {
		t.Errorf("got %s", data)
	}
}

func TestCallDecoding(t *testing.T) {
	srv := NewServer(t, Config{})
	body := oaiBody(`[{"role":"system","content":"be brief"},` + oUser + `,` + oCall + `,` + oTool + `,{"role":"user","content":"and?"}]`)
	if status, data := post(t, srv, OpenAI, body, false); status != http.StatusOK {
		t.Fatalf("%d %s", status, data)
	}
	c := srv.Last()
	want := []conv.Message{
		{Role: conv.RoleUser, Blocks: []conv.Block{{Type: conv.TypeText, Text: "hi"}}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{{Type: conv.TypeToolUse, ToolUseID: "call_1", Name: "Read"}}},
		{Role: conv.RoleUser, Blocks: []conv.Block{{Type: conv.TypeToolResult, ToolUseID: "call_1", Text: "package a"}, {Type: conv.TypeText, Text: "and?"}}},
	}
	if c.System != "be brief" || len(c.Messages) != len(want) {
		t.Fatalf("decoded %q %+v", c.System, c.Messages)
	}
	for i := range want {
		for j := range want[i].Blocks {
			g, w := c.Messages[i].Blocks[j], want[i].Blocks[j]
			if g.Type != w.Type || g.Text != w.Text || g.ToolUseID != w.ToolUseID || g.Name != w.Name {
				t.Errorf("message %d block %d = %+v, want %+v", i, j, g, w)
			}
		}
	}
	if got := string(c.Messages[1].Blocks[0].Input); got != `{"path":"a.go"}` {
		t.Errorf("input = %s", got)
	}
	if vs := conv.CheckRequest(&conv.Conversation{Messages: c.Messages}); len(vs) > 0 {
		t.Errorf("decoded messages break the invariants: %v", vs)
	}
}
