// Package demogen records the demo session that `ctxkit bench` replays when
// it is given no files. The recording is made by ctxkit's own agent, with a
// scripted model (llmtest's Anthropic server) and the real tools, over a
// copy of this repository's source tree: a multi-round task of reading,
// searching, editing and running go vet and go test, with failures the
// model reads and fixes, so later turns use identifiers, paths and numbers
// that earlier tool results produced.
//
// The scripted model answers each request from what the request holds (the
// line a grep found, the value a failing test printed), so the session
// stays consistent when the tree changes. Regenerate it with
//
//	go test ./agent/internal/demogen -run TestDemoSession -update
//
// which writes cmd/ctxkit/demo/demo-session.json (Anthropic Messages JSON:
// every message as the agent first produced it, from its transcript).
// Without -update the test checks the committed file: it imports, passes
// the invariant checker, and has the size and shape of a real session.
package demogen
