package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
)

// Result is what one Run did.
type Result struct {
	// Text is the model's final answer: the text of its last response.
	Text string `json:"result"`
	// StopReason is the last response's stop reason (end_turn,
	// max_tokens, …).
	StopReason string `json:"stop_reason"`
	// Turns counts the model responses of this run; Usage sums what its
	// requests cost, summary requests included; Compactions counts the
	// rung-3 compactions it made.
	Turns       int       `json:"turns"`
	Usage       llm.Usage `json:"usage"`
	Compactions int       `json:"compactions"`
}

// Run carries out one user turn: it adds prompt to the conversation and
// loops — micro-compaction and compaction, assembly, the model's streamed
// response, its tool calls — until the model answers without calling a
// tool. An empty prompt goes on with a turn that is waiting (Pending); a
// prompt given while one is waiting joins that turn's last message, so
// roles keep alternating.
//
// When ctx is cancelled the turn stops where it is: a response still
// streaming is dropped, running tools are stopped and get the error result
// InterruptedText, what was produced is recorded, and Run returns
// ErrInterrupted. The session stays usable.
func (a *Agent) Run(ctx context.Context, prompt string) (Result, error) {
	var res Result
	durable := context.WithoutCancel(ctx)
	// Calls whose results could not be recorded (the transcript failed
	// mid-turn) are answered first, so the conversation stays paired.
	if err := a.answerDangling(durable); err != nil {
		return res, err
	}
	pending := a.Pending()
	prompt = strings.TrimRight(prompt, "\r\n")
	if strings.TrimSpace(prompt) == "" {
		prompt = ""
		if !pending {
			return res, ErrNothing
		}
	}
	if prompt != "" && a.cfg.Changes != nil {
		if note := a.cfg.Changes.Changed(); note != "" {
			a.conv.Pending = append(a.conv.Pending, conv.NewText(conv.SourceReminder, note))
		}
	}
	switch {
	case prompt == "":
	case pending:
		if err := a.mergeInput(durable, prompt); err != nil {
			return res, err
		}
	default:
		if _, err := a.appendUser(durable, assemble.Input{Text: prompt}, a.carry); err != nil {
			return res, err
		}
		a.carry = nil
	}
	// The steps of finished rounds are history now: their results move
	// to rung 1 (seed 000 §3.1) before the new round's first request.
	if err := a.settle(durable); err != nil {
		return res, err
	}
	err := a.loop(ctx, &res)
	if errors.Is(err, ErrInterrupted) {
		a.mu.Lock()
		a.stats.Interrupted++
		a.mu.Unlock()
	}
	return res, err
}

// loop sends requests and runs tools until the model stops calling them.
func (a *Agent) loop(ctx context.Context, res *Result) error {
	durable := context.WithoutCancel(ctx)
	for step := 0; ; step++ {
		if a.cfg.MaxSteps > 0 && step >= a.cfg.MaxSteps {
			return ErrMaxSteps
		}
		resp, err := a.request(ctx, res)
		if err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return err
		}
		res.StopReason = resp.StopReason
		msg := resp.Message
		msg.Role = conv.RoleAssistant
		msg.Blocks = nonEmpty(msg.Blocks)
		if len(msg.Blocks) == 0 {
			// Nothing to record: an empty message would break the
			// conversation. The turn stays pending; Run goes on from it.
			a.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("the model sent an empty response (stop reason %q)", resp.StopReason)})
			a.observe(res, resp)
			return nil
		}
		if err := a.appendMessage(durable, msg); err != nil {
			return err
		}
		a.observe(res, resp)
		if resp.StopReason == "max_tokens" {
			a.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("the response was cut off at max_tokens (%d)", a.cfg.MaxTokens)})
		}
		last := &a.conv.Messages[len(a.conv.Messages)-1]
		calls := toolCalls(last)
		if len(calls) == 0 {
			res.Text = textOf(last)
			// The round is over: its results enter history compressed.
			return a.settle(durable)
		}
		results, compactInput := a.runTools(ctx, calls)
		if _, err := a.appendUser(durable, assemble.Input{Results: results}, nil); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if compactInput != nil {
			// The compact tool runs once the turn's results are recorded;
			// the loop then goes on from the summary.
			a.emit(Event{Kind: EventCompactStart, Trigger: compact.TriggerTool})
			r, err := a.eng.CompactTool(ctx, a.conv, compactInput)
			res.add(r.Compaction)
			a.account(ctx, r, compact.TriggerTool, err)
			if err != nil {
				if ctx.Err() != nil {
					return ErrInterrupted
				}
				a.emit(Event{Kind: EventWarning, Text: "the compaction the model asked for failed: " + err.Error(), Err: err})
			}
		}
	}
}

// request runs the engine and sends one request, compacting and retrying
// once when the provider finds the prompt too long.
func (a *Agent) request(ctx context.Context, res *Result) (*llm.Response, error) {
	ready, err := a.prepare(ctx, res)
	if err != nil {
		return nil, err
	}
	resp, err := a.send(ctx, ready)
	if err == nil || !errors.Is(err, llm.ErrPromptTooLong) || ctx.Err() != nil {
		return resp, err
	}
	ready, cerr := a.eng.Retry(ctx, a.conv, err)
	// What the refusal told the engine, else what it did.
	var told []string
	for _, d := range ready.Decisions {
		if d.Kind == engine.KindWindow {
			told = append(told, d.Reason)
		}
	}
	text := "the provider found the prompt too long"
	if len(told) > 0 {
		text = strings.Join(told, "; ")
	}
	if ready.Compaction.Compactions > 0 || cerr != nil {
		text += "; compacting and retrying once"
	}
	a.emit(Event{Kind: EventWarning, Text: text, Err: err})
	res.add(ready.Compaction)
	trigger := compact.TriggerReactive
	if ready.Compaction.Compactions == 0 && cerr == nil {
		trigger = "" // the same prompt goes out again, nothing compacted
	}
	a.account(ctx, ready, trigger, cerr)
	if cerr != nil {
		return nil, fmt.Errorf("agent: the prompt is too long and compaction could not make room: %w", cerr)
	}
	resp, err = a.send(ctx, ready)
	if err != nil && errors.Is(err, llm.ErrPromptTooLong) {
		return nil, fmt.Errorf("agent: the prompt is still too long after compaction (%w); start a new session from the summary with /clear --keep-summary", err)
	}
	return resp, err
}

// send streams the request the engine assembled.
func (a *Agent) send(ctx context.Context, ready engine.Ready) (*llm.Response, error) {
	a.emit(Event{Kind: EventRequest, Tokens: a.eng.Usage(a.conv)})
	resp, err := a.cfg.Provider.Stream(ctx, ready.Request, a.onStream)
	if err != nil {
		return nil, err
	}
	rep := a.monitor.Observe(ctx, ready.Request, resp.Usage, a.cfg.Clock())
	if rep.Thrash != nil {
		a.emit(Event{Kind: EventWarning, Text: rep.Thrash.Message})
	}
	return resp, nil
}

// observe accounts for a response: usage recalibrates the engine's
// measure of the context (seed 000's A6 rule) and adds to the totals.
func (a *Agent) observe(res *Result, resp *llm.Response) {
	a.eng.Observe(a.conv, resp.Usage)
	res.Turns++
	res.Usage = res.Usage.Add(resp.Usage)
	a.mu.Lock()
	a.stats.Turns++
	a.stats.Usage = a.stats.Usage.Add(resp.Usage)
	a.stats.LastPrompt = resp.Usage.Prompt()
	a.mu.Unlock()
	a.emit(Event{Kind: EventResponse, Usage: resp.Usage, StopReason: resp.StopReason})
}

// prepare asks the engine for the next request: micro-compaction (rungs
// 1–2 and the oversize guard), then compaction (rung 3) when the context
// is over its threshold, then assembly.
func (a *Agent) prepare(ctx context.Context, res *Result) (engine.Ready, error) {
	a.compacting = ""
	r, err := a.eng.Prepare(ctx, a.conv)
	res.add(r.Compaction)
	a.account(ctx, r, a.compacting, err)
	if err == nil {
		return r, nil
	}
	if ctx.Err() != nil {
		return r, ErrInterrupted
	}
	return r, fmt.Errorf("agent: %w", err)
}

// account reports what an engine call did: events for the user, the
// session's totals, and the engine's account in the transcript. trigger
// is the compaction announced, if any.
func (a *Agent) account(ctx context.Context, r engine.Ready, trigger compact.Trigger, err error) {
	a.decided(r.Decisions)
	if kerr := a.keepAccount(ctx); kerr != nil {
		// The transcript takes no more records: the turn stops at the
		// next message it cannot record.
		a.emit(Event{Kind: EventWarning, Text: kerr.Error(), Err: kerr})
	}
	mr := r.Micro
	if n := mr.Compressed + mr.Cleared + mr.Spilled; n > 0 {
		a.mu.Lock()
		a.stats.Compressed += mr.Compressed
		a.stats.Cleared += mr.Cleared
		a.stats.Spilled += mr.Spilled
		a.mu.Unlock()
		a.emit(Event{Kind: EventMicro, Micro: &mr})
	}
	for _, w := range r.Warnings {
		// Automatic compaction stopping is said once, when it stops: the
		// requests after it go on (compacting offline where they must),
		// and each would say the same again.
		var stopped *compact.StoppedError
		if errors.As(w, &stopped) {
			if a.stopShown != nil && a.stopShown.Reason == stopped.Reason {
				continue
			}
			a.stopShown = stopped
		}
		a.emit(Event{Kind: EventWarning, Text: warningText(w), Err: w})
	}
	if a.stopShown != nil && a.eng.State().Stopped == nil {
		a.stopShown = nil
		a.emit(Event{Kind: EventNote, Text: "automatic compaction is back on"})
	}
	endErr := err
	if ctx.Err() != nil {
		endErr = nil // the caller says it was interrupted, once
	}
	cr := r.Compaction
	if cr.Compactions > 0 {
		a.monitor.Compacted()
	}
	a.mu.Lock()
	a.stats.Compactions += cr.Compactions
	a.stats.Usage = a.stats.Usage.Add(cr.Usage)
	a.mu.Unlock()
	if trigger != "" || cr.Compactions > 0 || endErr != nil && ctx.Err() == nil {
		if cr.Trigger == "" {
			cr.Trigger = trigger
		}
		a.emit(Event{Kind: EventCompactEnd, Trigger: cr.Trigger, Compact: &cr, Err: endErr})
	}
}

// decided logs the engine's decisions and keeps the latest for /context.
func (a *Agent) decided(ds []engine.Decision) {
	if len(ds) == 0 {
		return
	}
	for _, d := range ds {
		a.cfg.Logger.Info("engine decision", "request", d.Request, "kind", d.Kind, "blocks", d.Blocks, "tokens", d.Tokens, "reason", d.Reason)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decisions = engine.AddDecisions(a.decisions, ds...)
	if n := len(a.decisions); n > maxDecisions {
		a.decisions = append(a.decisions[:0], a.decisions[n-maxDecisions:]...)
	}
}

// warningText is what the user is told about an error the engine worked
// around.
func warningText(err error) string {
	var stopped *compact.StoppedError
	if errors.As(err, &stopped) {
		return stopped.Error()
	}
	return err.Error()
}

// Compact is the manual compaction behind "/compact [focus]": earlier
// turns become a summary whatever the thresholds say, and automatic
// compaction, if it had stopped, is back on. When ctx is cancelled it
// returns ErrInterrupted; the session is as it was, or compacted as far as
// the compaction got.
func (a *Agent) Compact(ctx context.Context, focus string) (compact.Result, error) {
	a.emit(Event{Kind: EventCompactStart, Trigger: compact.TriggerManual})
	r, err := a.eng.Compact(ctx, a.conv, focus)
	a.account(ctx, r, compact.TriggerManual, err)
	if err != nil && ctx.Err() != nil {
		return r.Compaction, ErrInterrupted
	}
	return r.Compaction, err
}

func (r *Result) add(c compact.Result) {
	r.Compactions += c.Compactions
	r.Usage = r.Usage.Add(c.Usage)
}

func (a *Agent) onStream(e llm.Event) {
	switch e.Kind {
	case llm.EventText:
		a.emit(Event{Kind: EventText, Text: e.Text})
	case llm.EventThinking:
		a.emit(Event{Kind: EventThinking, Text: e.Text})
	case llm.EventRetry:
		a.emit(Event{Kind: EventRetry, Text: e.Text})
	}
}

// appendUser builds the user message of a turn (results first, then
// pending injections, then the user's words, with carry before the words)
// and appends it.
func (a *Agent) appendUser(ctx context.Context, in assemble.Input, carry []conv.Block) (conv.Message, error) {
	m, notes, err := a.eng.Message(ctx, a.conv, in)
	for _, n := range notes {
		a.emit(Event{Kind: EventNote, Text: n})
	}
	if err != nil {
		return m, fmt.Errorf("agent: %w", err)
	}
	if len(carry) > 0 {
		k := len(in.Results)
		blocks := append([]conv.Block(nil), m.Blocks[:k]...)
		for _, b := range carry {
			b = b.Clone()
			b.ID = "" // a new block of this session
			blocks = append(blocks, b)
		}
		m.Blocks = append(blocks, m.Blocks[k:]...)
	}
	if err := a.appendMessage(ctx, m); err != nil {
		return m, err
	}
	a.conv.Pending = nil
	return a.conv.Messages[len(a.conv.Messages)-1], nil
}

// appendMessage appends m to the conversation and to the transcript, and
// takes it back if the transcript could not hold it.
func (a *Agent) appendMessage(ctx context.Context, m conv.Message) error {
	now := a.cfg.Clock().UTC()
	for i := range m.Blocks {
		if m.Blocks[i].Meta.CreatedAt.IsZero() {
			m.Blocks[i].Meta.CreatedAt = now
		}
	}
	n, seq := len(a.conv.Messages), a.conv.Seq
	a.conv.Append(m)
	if err := a.store.Append(ctx, a.conv.Messages[n]); err != nil {
		a.conv.Messages, a.conv.Seq = a.conv.Messages[:n], seq
		return fmt.Errorf("agent: recording a message: %w", err)
	}
	return nil
}

func nonEmpty(bs []conv.Block) []conv.Block {
	out := bs[:0:0]
	for _, b := range bs {
		if !b.Empty() {
			out = append(out, b)
		}
	}
	return out
}

func toolCalls(m *conv.Message) []conv.Block {
	var calls []conv.Block
	for _, b := range m.Blocks {
		if b.Type == conv.TypeToolUse {
			calls = append(calls, b)
		}
	}
	return calls
}

func textOf(m *conv.Message) string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Type == conv.TypeText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}
