package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

func TestPeek(t *testing.T) {
	s := start(t, options{window: 24000},
		say(llmtest.Calls("", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))),
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/worker.log"}`))),
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"echo hi"}`))),
		say(llmtest.Text("done")))
	if _, err := s.agent.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	dump(t, s.agent.Conversation())
	b, _ := os.ReadFile(s.dir + "/transcript.jsonl")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"type":"edit"`) {
			if len(l) > 1500 { l = l[:1500] }
			t.Log(l)
		}
	}
}
