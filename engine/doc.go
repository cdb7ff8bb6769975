// Package engine owns one turn of a coding agent's context: it is the only
// place that wires micro-compaction (rungs 1–2, package micro), compaction
// (rung 3, package compact) and request assembly (package assemble), with
// one set of defaults. The coding agent, the replay benchmark, ctxkit
// compact and the proxy all call it, so what the benchmark measures is
// what the agent runs.
//
// # A deterministic core
//
// In the style of etcd raft's RawNode, the engine decides and the caller
// does the I/O. Everything it needs from outside comes in through small
// interfaces in Config: the Keeper that makes originals durable (the
// agent's transcript, the benchmark's memory, the proxy's store), the
// Summarizer (an LLM, or the offline extractive one), the Workspace where
// project rules and @file mentions are looked up (the agent passes its
// os.Root's FS; a replay passes none), the Counter and the Clock. Given
// the same conversation, the same calls and the same answers from those
// interfaces, an Engine returns byte-identical requests.
//
// # A turn
//
// A turn is one request and its response. The caller appends the user
// message (Message builds it: tool results first, then injections and
// @file reminders, then the user's words), calls Prepare, sends
// Ready.Request, appends the model's response to the conversation and
// calls Observe with the usage the provider reported. A round is the
// turns from a user's words to the model's answer that calls no tool;
// when it ends, RoundEnded moves its tool results to their compressed
// form (rung 1). The order of calls:
//
//	e, err := engine.New(engine.Config{Model: model, Keeper: store})
//	for each user input:
//	    m, notes, err := e.Message(ctx, c, assemble.Input{Text: input})
//	    append m to c (and to the transcript)
//	    e.RoundEnded(ctx, c)                  // the previous round's results → rung 1
//	    loop:
//	        ready, err := e.Prepare(ctx, c)   // rungs 1–3, then the request
//	        resp, err := send(ready.Request)
//	        if errors.Is(err, llm.ErrPromptTooLong) {
//	            ready, err = e.Retry(ctx, c, err) // compact and send once more
//	        }
//	        append resp's message to c; e.Observe(c, resp.Usage)
//	        if the model called no tool: e.RoundEnded(ctx, c); break
//	        run the tools; append their results (Message with Results)
//
// Compact is the manual "/compact [focus]"; CompactTool runs the model's
// compact tool call once the turn's results are appended. Expire says the
// provider's cache has gone cold (a resumed session); Reset that the
// conversation was changed other than by appending. Account is what a
// caller that resumes sessions persists after each call, and Resume gives
// it back to a resumed session's new engine.
//
// # What Ready holds
//
// Ready is what one call decided: the Request to send, assembled with its
// cache anchors (Assembly says where the layers and anchors are); the
// Edits applied to the conversation, in order, with the Originals each
// one made durable first; what each rung did (Micro, Round, Compaction);
// the Decisions with their reasons (compress, clear, spill, wait,
// compact, fallback, stopped), each with the request it came with, for
// /context, logs and the benchmark's marks (AddDecisions counts a run of
// the same one once); and Warnings the engine worked around.
//
// # Persistence
//
// Nothing leaves the context before the transcript holds it durably
// (DESIGN.md invariant 5): every edit goes to Config.Keeper with the
// conversation as it stands before the edit, and is applied only when
// Keep returned nil. The engine never writes a file or calls fsync
// itself; a compaction's regions depend on the edits before them, so the
// engine keeps and applies them one by one rather than handing them back
// in a batch.
//
// # Defaults
//
// New fills in every default in one place, from the model table
// (llm.DefaultModels): the window, the output limit and the shortest
// cacheable prefix of Config.Model; a model the table does not know gets
// DefaultWindow (128,000 tokens) and llm.DefaultMaxOutput. Pricing is
// Anthropic's, the policy cache-aware on those prices, the summarizer
// extractive, the counter the fast estimator, and there is no clock
// (the cache is taken as warm unless Expire says otherwise). Thresholds
// and keep counts are micro's and compact's defaults (Config.Micro,
// Config.Compact). The prices drive both policies: micro's cache-aware
// clearing and compact's schedule (a compaction comes where the cost model
// says it is due, once the session has gone on long enough for it to pay;
// Engine.Schedule shows the arithmetic), and the engine tells micro before
// every request where the next compaction is expected. A value that cannot
// work is an error wrapping ErrConfig.
//
// # Do no harm
//
// A step that costs at once and saves later (a clearing's rewrite, a
// round end's compression, an early compaction) is taken only when it
// pays back within the horizon nine times in ten, and only when its cost
// is covered by what the session has saved so far against sending
// everything: the engine keeps that account (account.go; Saved), the same
// in every caller, so a session that ends right after a step still costs
// no more than sending everything would have.
//
// # Concurrency
//
// An Engine serves one conversation and is not safe for concurrent use:
// the caller serialises Prepare, Retry, RoundEnded, Observe, Compact and
// CompactTool, and does not change the conversation while one runs.
// Several Engines run side by side freely (the benchmark replays many
// sessions at once), as long as they share no conversation.
package engine
