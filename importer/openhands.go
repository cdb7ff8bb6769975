package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// ohEvent is one entry of an OpenHands history: an action or an
// observation, in either the event-stream or the older flat form.
type ohEvent struct {
	ID          *int                       `json:"id"`
	Timestamp   string                     `json:"timestamp"`
	Source      string                     `json:"source"`
	Message     string                     `json:"message"`
	Action      string                     `json:"action"`
	Observation string                     `json:"observation"`
	Cause       *int                       `json:"cause"`
	Content     json.RawMessage            `json:"content"`
	Args        map[string]json.RawMessage `json:"args"`
	Extras      json.RawMessage            `json:"extras"`
	ExitCode    *int                       `json:"exit_code"`
	ToolCall    *ohToolCall                `json:"tool_call_metadata"`

	// The flat form keeps an action's arguments at the top level.
	Command string `json:"command"`
	Code    string `json:"code"`
	Thought string `json:"thought"`
}

type ohToolCall struct {
	FunctionName  string `json:"function_name"`
	ToolCallID    string `json:"tool_call_id"`
	ModelResponse struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	} `json:"model_response"`
}

// arg returns a string argument of an event-stream action.
func (e *ohEvent) arg(key string) string {
	var s string
	_ = json.Unmarshal(e.Args[key], &s)
	return s
}

// text is an event's content as text.
func (e *ohEvent) text() string {
	s, _ := textParts(e.Content)
	return s
}

// openHands imports an OpenHands evaluation record: its history is an
// event stream in which an observation names the action it answers by
// cause (the action's id), which is safer than the short tool_call_ids
// models generate.
func (r *run) openHands() error {
	oh := ohImport{run: r, calls: map[int]string{}}
	return r.document(func(s *stream, key string) error {
		switch key {
		case "history":
			return elements(r, s, oh.event)
		case "metadata":
			var md struct {
				LLM struct {
					Model string `json:"model"`
				} `json:"llm_config"`
			}
			if err := s.decode(&md); err != nil {
				return err
			}
			r.s.Model = md.LLM.Model
			return nil
		}
		return s.skip()
	})
}

type ohImport struct {
	*run
	calls    map[int]string // action id → tool_use id, until answered
	lastResp string         // model response id of the last assistant message
}

func (oh *ohImport) event(i int, e *ohEvent) error {
	oh.b.at, _ = time.Parse("2006-01-02T15:04:05.999999999", e.Timestamp)
	switch {
	case e.Action == "system":
		oh.b.systemText(e.arg("content"))
		var tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(e.Args["tools"], &tools); err == nil {
			for _, t := range tools {
				oh.b.tools = append(oh.b.tools, conv.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: compact(t.Function.Parameters)})
			}
		}
	case e.Action == "message" && e.ToolCall == nil:
		text := e.arg("content")
		if text == "" {
			text = e.Message
		}
		if e.Source == "user" {
			oh.b.user(conv.NewText(conv.SourceUser, text))
		} else {
			oh.b.assistant(conv.NewText(conv.SourceAssistant, text))
			oh.lastResp = ""
		}
	case e.Action == "recall":
		// The harness's request for context; its observation carries it.
	case e.Action != "" && e.ToolCall != nil:
		oh.toolCall(e)
	case e.Action != "":
		oh.plainAction(e)
	case e.Observation != "":
		oh.observe(e)
	default:
		oh.unknown("history event with neither action nor observation")
	}
	return nil
}

// toolCall adds an action the model asked for with a native tool call;
// several actions from one model response share one assistant message.
func (oh *ohImport) toolCall(e *ohEvent) {
	tc := e.ToolCall
	input := json.RawMessage(nil)
	var text string
	if cs := tc.ModelResponse.Choices; len(cs) > 0 {
		text, _ = textParts(cs[0].Message.Content)
		for _, c := range cs[0].Message.ToolCalls {
			if c.ID == tc.ToolCallID {
				input = wire.Arguments(c.Function.Arguments)
			}
		}
	}
	if input == nil {
		input = argsInput(e.Args)
	}
	if text == "" {
		text = e.arg("thought")
	}
	call := oh.b.call(tc.ToolCallID, tc.FunctionName, input)
	if e.ID != nil {
		oh.calls[*e.ID] = call.ToolUseID
	}
	resp := tc.ModelResponse.ID
	if last := oh.b.last(); resp != "" && resp == oh.lastResp && last != nil && last.Role == conv.RoleAssistant {
		oh.b.stamp([]conv.Block{call})
		last.Blocks = append(last.Blocks, call)
		return
	}
	oh.lastResp = resp
	var bs []conv.Block
	if strings.TrimSpace(text) != "" {
		bs = append(bs, conv.NewText(conv.SourceAssistant, text))
	}
	oh.b.assistant(append(bs, call)...)
}

// plainAction adds an action recorded without a tool call (older runs).
func (oh *ohImport) plainAction(e *ohEvent) {
	oh.lastResp = ""
	thought := e.arg("thought")
	switch e.Action {
	case "finish":
		if t := e.arg("final_thought"); t != "" {
			thought = strings.TrimSpace(thought + "\n\n" + t)
		}
		oh.b.assistant(conv.NewText(conv.SourceAssistant, thought))
		return
	case "think":
		oh.b.assistant(conv.NewText(conv.SourceAssistant, thought))
		return
	case "change_agent_state", "null", "condensation":
		oh.skip("action " + e.Action)
		return
	}
	name, input := actionTool(e.Action, e.Args)
	var bs []conv.Block
	if strings.TrimSpace(thought) != "" {
		bs = append(bs, conv.NewText(conv.SourceAssistant, thought))
	}
	call := oh.b.call("", name, input)
	if e.ID != nil {
		oh.calls[*e.ID] = call.ToolUseID
	}
	oh.b.assistant(append(bs, call)...)
}

// observe adds an observation: the result of the action it was caused by,
// or injected text (an error the harness reports, recalled context).
func (oh *ohImport) observe(e *ohEvent) {
	var extras struct {
		Metadata struct {
			ExitCode *int   `json:"exit_code"`
			Prefix   string `json:"prefix"`
			Suffix   string `json:"suffix"`
		} `json:"metadata"`
		ExitCode *int `json:"exit_code"`
	}
	_ = json.Unmarshal(e.Extras, &extras)
	text := e.text()
	if e.Cause != nil {
		if id, ok := oh.calls[*e.Cause]; ok {
			delete(oh.calls, *e.Cause)
			text = extras.Metadata.Prefix + text + extras.Metadata.Suffix
			code := extras.Metadata.ExitCode
			if code == nil {
				code = extras.ExitCode
			}
			isErr := e.Observation == "error" || code != nil && *code > 0
			oh.b.user(oh.b.result(id, text, isErr))
			return
		}
	}
	switch e.Observation {
	case "error":
		oh.b.user(conv.NewText(conv.SourceHook, text))
	case "recall":
		// What OpenHands sends for recalled context is not the event's
		// content ("Added workspace context", a line for its UI) but the
		// context itself, rendered as recallTexts does; the proxy and
		// this importer tell it from the user's words by its openings
		// (wire.UserSource).
		for _, t := range recallTexts(e.Extras) {
			oh.b.user(wire.Text(conv.SourceUser, t))
		}
	default:
		// agent_state_changed, null, …: never reached the model.
		oh.skip("observation " + e.Observation)
	}
}

// actionTool names the tool an action without a tool call stands for:
// run is bash, run_ipython is ipython, others keep their action name with
// their arguments as input.
func actionTool(action string, args map[string]json.RawMessage) (string, json.RawMessage) {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(args[k], &s)
		return s
	}
	switch action {
	case "run":
		return "bash", bashInput(str("command"))
	case "run_ipython":
		return "ipython", marshal(struct {
			Code string `json:"code"`
		}{str("code")})
	}
	return action, argsInput(args)
}

// argsInput is an action's arguments as a tool input, without the fields
// that are bookkeeping rather than input.
func argsInput(args map[string]json.RawMessage) json.RawMessage {
	in := make(map[string]json.RawMessage, len(args))
	for k, v := range args {
		switch k {
		case "action", "thought", "is_confirmed", "confirmation_state", "security_risk", "action_risk", "hidden",
			"keep_prompt", "kernel_init_code", "blocking", "is_static", "impl_source", "cwd", "is_input":
			continue
		}
		in[k] = v
	}
	return marshal(in) // sorted keys: the original order is not known here
}

func compact(r json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, r) != nil || buf.Len() == 0 || buf.String() == "null" {
		return nil
	}
	return buf.Bytes()
}

// ohRecall is what a recall observation holds: the workspace context
// (the repository, its instructions, the runtime) and the microagents a
// keyword triggered.
type ohRecall struct {
	Type         string         `json:"recall_type"`
	RepoName     string         `json:"repo_name"`
	RepoDir      string         `json:"repo_directory"`
	Instructions string         `json:"repo_instructions"`
	Hosts        map[string]int `json:"runtime_hosts"`
	Additional   string         `json:"additional_agent_instructions"`
	Date         string         `json:"date"`
	Knowledge    []struct {
		Trigger string `json:"trigger"`
		Content string `json:"content"`
	} `json:"microagent_knowledge"`
}

// recallTexts are the user-side texts OpenHands sends the model for a
// recall observation (its ConversationMemory, with the templates
// additional_info.j2 and microagent_info.j2): the workspace context, each
// part in the tag OpenHands gives it (<REPOSITORY_INFO>,
// <REPOSITORY_INSTRUCTIONS>, <RUNTIME_INFORMATION>), and the microagents'
// knowledge, each in an <EXTRA_INFO>. The wording inside the tags is this
// importer's; the tags and the content are the recording's. None when
// the observation holds nothing OpenHands would send.
func recallTexts(raw json.RawMessage) []string {
	var r ohRecall
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	var out []string
	if r.Type == "workspace_context" {
		var ws []string
		if r.RepoName != "" || r.RepoDir != "" {
			ws = append(ws, fmt.Sprintf("<REPOSITORY_INFO>\nRepository %s, cloned to %s.\n</REPOSITORY_INFO>", r.RepoName, r.RepoDir))
		}
		if strings.TrimSpace(r.Instructions) != "" {
			ws = append(ws, "<REPOSITORY_INSTRUCTIONS>\n"+r.Instructions+"\n</REPOSITORY_INSTRUCTIONS>")
		}
		var rt []string
		if len(r.Hosts) > 0 {
			hosts := make([]string, 0, len(r.Hosts))
			for h := range r.Hosts {
				hosts = append(hosts, h)
			}
			slices.Sort(hosts)
			var sb strings.Builder
			sb.WriteString("Hosts for a web application, each with its port:")
			for _, h := range hosts {
				fmt.Fprintf(&sb, "\n* %s (port %d)", h, r.Hosts[h])
			}
			rt = append(rt, sb.String())
		}
		rt = append(rt, r.Additional)
		if r.Date != "" {
			rt = append(rt, "Today's date: "+r.Date+" (UTC).")
		}
		if body := joinNonEmpty(rt); body != "" {
			ws = append(ws, "<RUNTIME_INFORMATION>\n"+body+"\n</RUNTIME_INFORMATION>")
		}
		if len(ws) > 0 {
			out = append(out, strings.Join(ws, "\n"))
		}
	}
	var extra []string
	for _, k := range r.Knowledge {
		if strings.TrimSpace(k.Content) == "" {
			continue
		}
		extra = append(extra, fmt.Sprintf("<EXTRA_INFO>\nIncluded for the keyword %q; it may not bear on the request.\n\n%s\n</EXTRA_INFO>", k.Trigger, k.Content))
	}
	if len(extra) > 0 {
		out = append(out, strings.Join(extra, "\n"))
	}
	return out
}

// joinNonEmpty joins the parts that hold more than white space with a
// blank line.
func joinNonEmpty(parts []string) string {
	var keep []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n\n")
}

// openHandsResolver imports the older flat OpenHands history (resolver
// output): the user's task, then actions each answered by the observation
// right after it. Entries may also come as [action, observation] pairs.
func (r *run) openHandsResolver() error {
	call := ""
	asked := false
	handle := func(raw json.RawMessage) error {
		var e ohEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err))
		}
		r.total++
		// The flat form keeps arguments at the top level.
		var top map[string]json.RawMessage
		_ = json.Unmarshal(raw, &top)
		switch {
		case e.Action == "message":
			text := e.text()
			if e.Source == "user" || e.Source == "" && !asked {
				r.b.user(conv.NewText(conv.SourceUser, text))
				asked = true
			} else {
				r.b.assistant(conv.NewText(conv.SourceAssistant, text))
			}
			call = ""
		case e.Action == "finish", e.Action == "think":
			r.b.assistant(conv.NewText(conv.SourceAssistant, e.Thought))
			call = ""
		case e.Action == "run":
			call = r.b.textStep(e.Thought, e.Command, true)
		case e.Action != "":
			name, input := actionTool(e.Action, top)
			var bs []conv.Block
			if strings.TrimSpace(e.Thought) != "" {
				bs = append(bs, conv.NewText(conv.SourceAssistant, e.Thought))
			}
			c := r.b.call("", name, input)
			call = c.ToolUseID
			r.b.assistant(append(bs, c)...)
		case e.Observation != "":
			isErr := e.ExitCode != nil && *e.ExitCode > 0 || e.Observation == "error"
			if call != "" {
				r.b.user(r.b.result(call, e.text(), isErr))
			} else if e.Observation == "error" {
				r.b.user(conv.NewText(conv.SourceHook, e.text()))
			} else {
				r.skip("observation " + e.Observation)
			}
			call = ""
		default:
			r.unknown("history entry with neither action nor observation")
		}
		return nil
	}
	return r.document(func(s *stream, key string) error {
		if key != "history" {
			return s.skip()
		}
		return s.array(func(i int) error {
			var raw json.RawMessage
			if err := s.decode(&raw); err != nil {
				return err
			}
			if err := r.tick(i); err != nil {
				return err
			}
			if raw = bytes.TrimSpace(raw); len(raw) > 0 && raw[0] == '[' {
				var pair []json.RawMessage
				if err := json.Unmarshal(raw, &pair); err != nil {
					return fmt.Errorf("%w: history[%d]: %v", ErrMalformed, i, jsonerr.What(err))
				}
				for _, p := range pair {
					if err := handle(p); err != nil {
						return err
					}
				}
				return nil
			}
			return handle(raw)
		})
	})
}
