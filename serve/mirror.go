package serve

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/wire"
)

// A mirror is the engine's side of one client conversation: the
// conv.Conversation the engine decides on, built from the client's
// messages, and the Engine deciding on it. The client resends its whole
// history every turn; the mirror appends what is new, steps the engine
// once per request the history holds (engine.Replay: the same calls in the
// same order as the agent and the bench make them), and the proxy splices
// the engine's edits into the client's bytes (render.go).
//
// What the engine decides is a function of the client's history and the
// summaries it was given: block ids are content hashes, the engine gets
// no clock and no provider usage (it counts with the project's estimator),
// and every summary is stored under the hash of what it replaces and read
// back before any model is asked. So a mirror rebuilt from the history —
// after a restart, on a second replica, after the cache dropped it —
// decides alike, and a mirror is only a cache: it can be dropped at any
// time.

// mirror is one conversation's engine state. Its lock is held from the
// decision until the upstream answered (commit.go).
type mirror struct {
	mu     sync.Mutex
	key    string
	tenant string // whose conversation it is (the cache's fair share)
	e      *engine.Engine
	replay *engine.Replay
	c      *conv.Conversation

	wire   []string          // hashes of the client's messages mapped so far
	roles  []string          // their roles
	nparts []int             // their parts
	origin map[string]origin // conv block id → the client part it came from
	groups map[string]group  // first block id of a conv message built from client messages → them
	used   map[string]int    // content hash → its uses, for unique ids
	short  map[string]string // content hash → its id (mirror.id)
	taken  map[string]bool   // ids handed out
	client int               // tokens of the client's messages, as the engine counts them
	fixed  string            // hash of the system prompt and tools counted
	fixedN int               // the request's Fixed the mirror was built for

	zs   *summarizerAdapter
	kept *keeperAdapter

	pending pending // what this request decided, stored once the upstream accepts it
	synced  int64   // the session's store version after this mirror's last commit (-1: none)
	broken  bool    // a step failed half-way: rebuild

	fixedTok int // tokens of the system prompt and tools, as the engine counts them
	tokens   int // the engine's count of the last request it decided
	// saved is what the last request stepped changed the engine's account
	// by, in dollars (engine.Engine.Saved): the request's own, not the
	// history's a rebuilt mirror steps through first.
	saved float64

	// The engine's inputs besides the history (observe.go): what the
	// provider reported for each response and when each request was sent,
	// by request key; those not yet stored; the key of the request last
	// stepped; the time of the request being stepped (the engine's clock).
	obs map[string]observation
	// refused holds the sizes an upstream stated in refusing a request
	// for its size (a zero llm.Limit: none stated), by request key: the
	// engine retried that request (engine.Engine.Retry) and the proxy sent
	// it again (Server.resend); a rebuilt mirror does the same there.
	refused map[string]llm.Limit
	unsaved []store.Decision
	prevKey string
	resp    int // index in c of the response to the request prevKey names (-1: none yet)
	now     time.Time
	loaded  bool
}

// origin is where a conv block came from: part p of client message msg.
type origin struct {
	msg, part int
	kind      partKind
	role      string
}

// group is the client messages [lo, hi) one conv message was built from,
// and the ids of its blocks in order.
type group struct {
	lo, hi int
	ids    []string
}

// pending is what a request decided that the store must hold before its
// decisions count: the originals of what left the context, the summaries
// written, and the decisions.
type pending struct {
	originals []store.Original
	summaries []store.Summary
	decisions []store.Decision
	compacted int
	cleared   int
	dropped   int
	admitted  int // oversize blocks of the newest message cut
	methods   []string
	observed  []store.Decision // reports on earlier responses (observe.go), stored with these
}

func (p *pending) empty() bool {
	return len(p.originals) == 0 && len(p.summaries) == 0 && len(p.decisions) == 0
}

// mirrors is a bounded cache of mirrors, shared fairly among tenants: at
// most max in all, and when it is full the one dropped is the least
// recently used of the tenant holding the most, so one tenant's many
// conversations never push out another's few (each keeps at least its
// share, max divided by the tenants present).
type mirrors struct {
	mu      sync.Mutex
	max     int
	n       int
	m       map[string]*list.Element // key → element of its tenant's list
	tenants map[string]*list.List    // tenant → its mirrors, most recently used first
}

const maxMirrors = 512

func newMirrors() *mirrors {
	return &mirrors{max: maxMirrors, m: map[string]*list.Element{}, tenants: map[string]*list.List{}}
}

// get returns the mirror under key, or a new one of tenant's from mk.
func (ms *mirrors) get(key, tenant string, mk func() *mirror) *mirror {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if el, ok := ms.m[key]; ok {
		ms.tenants[el.Value.(*mirror).tenant].MoveToFront(el)
		return el.Value.(*mirror)
	}
	m := mk()
	m.key, m.tenant = key, tenant
	l := ms.tenants[tenant]
	if l == nil {
		l = list.New()
		ms.tenants[tenant] = l
	}
	ms.m[key] = l.PushFront(m)
	ms.n++
	for ms.n > ms.max {
		ms.evict()
	}
	return m
}

// evict drops the least recently used mirror of the tenant holding the
// most (the first such tenant by name, on a tie: deterministic).
func (ms *mirrors) evict() {
	var most string
	var ml *list.List
	for t, l := range ms.tenants {
		if ml == nil || l.Len() > ml.Len() || l.Len() == ml.Len() && t < most {
			most, ml = t, l
		}
	}
	if ml == nil {
		return
	}
	ms.remove(ml.Back())
}

// remove drops el from the cache.
func (ms *mirrors) remove(el *list.Element) {
	m := el.Value.(*mirror)
	l := ms.tenants[m.tenant]
	l.Remove(el)
	if l.Len() == 0 {
		delete(ms.tenants, m.tenant)
	}
	delete(ms.m, m.key)
	ms.n--
}

// len is the number of mirrors held.
func (ms *mirrors) len() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.n
}

// drop forgets m (if it is still the mirror under its key).
func (ms *mirrors) drop(m *mirror) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if el, ok := ms.m[m.key]; ok && el.Value.(*mirror) == m {
		ms.remove(el)
	}
}

// mirrorKey names the conversation a request continues: its tenant and session, its
// window arithmetic, and the start of its history (a client's side
// requests — titles, sub-agents — share the session but not the start).
func mirrorKey(tenant, session string, req *request, window, maxOut int, recallTool string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%d\x00%s\x00%s\x00", tenant, session, req.API, window, maxOut, req.Model, recallTool)
	for i, m := range req.Messages {
		if req.fixed(i) {
			continue
		}
		h.Write([]byte(m.Hash))
		break
	}
	return sum(h)
}

// engineConfig is the engine's configuration for a request's
// conversation: the provider's prices, the request's window and
// max_tokens, and the proxy's policy and keep value; every other setting
// (the oversize guard's limit among them) is the engine's default.
func (s *Server) engineConfig(req *request, window int, recallTool string) engine.Config {
	p := pricesOf(req.Provider)
	maxTok := engine.MaxTokensFor(req.MaxOut, window)
	return engine.Config{
		Model: req.Model, Window: window, MaxTokens: max(maxTok, 0), Pricing: p, Policy: s.cfg.Policy, KeepValue: s.cfg.KeepValue,
		Counter: s.counter, RuleFiles: []string{}, RecallTool: recallTool,
	}
}

// pricesOf is the provider's price table: Anthropic's, or OpenAI's or
// Gemini's automatic (implicit) caching.
func pricesOf(provider string) pricing.Table {
	switch provider {
	case providerOpenAI:
		return pricing.OpenAI()
	case providerGemini:
		return pricing.Gemini()
	}
	return pricing.Anthropic()
}

// newMirror returns an empty mirror for req's conversation.
func (s *Server) newMirror(key string, req *request, window int, recallTool string) (*mirror, error) {
	m := &mirror{key: key, c: &conv.Conversation{}, origin: map[string]origin{}, groups: map[string]group{},
		used: map[string]int{}, short: map[string]string{}, taken: map[string]bool{}, synced: -1, fixedN: req.Fixed, obs: map[string]observation{}, refused: map[string]llm.Limit{}, resp: -1}
	m.zs = &summarizerAdapter{s: s, m: m}
	m.kept = &keeperAdapter{m: m}
	cfg := s.engineConfig(req, window, recallTool)
	cfg.Summarizer, cfg.Keeper = m.zs, m.kept
	cfg.Clock = func() time.Time { return m.now }
	e, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	m.e, m.replay = e, engine.NewReplay(e)
	return m, nil
}

// roleOf is the engine's role for a client message role ("" for the
// system prompt's).
func roleOf(r string) conv.Role {
	switch r {
	case "assistant", "model":
		return conv.RoleAssistant
	case "system", "developer":
		return ""
	}
	return conv.RoleUser
}

// extends reports whether req's messages begin with the mirror's.
func (m *mirror) extends(req *request) bool {
	if len(req.Messages) < len(m.wire) || req.Fixed != m.fixedN {
		return false
	}
	for i, h := range m.wire {
		if req.Messages[i].Hash != h {
			return false
		}
	}
	return true
}

// setFixed sets what the engine counts besides the messages: the system
// prompt and the tool schemas, as the client sent them.
func (m *mirror) setFixed(req *request) {
	// Unchanged (as from request to request): counted once.
	h := sha256.New()
	if req.System.ok() {
		h.Write(req.Body[req.System.s:req.System.e])
	}
	h.Write([]byte{0})
	if req.ToolsSpan.ok() {
		h.Write(req.Body[req.ToolsSpan.s:req.ToolsSpan.e])
	}
	h.Write([]byte{0})
	if req.Instructions.ok() {
		h.Write(req.Body[req.Instructions.s:req.Instructions.e])
	}
	for i, msg := range req.Messages {
		if req.fixed(i) {
			h.Write([]byte(msg.Hash))
		}
	}
	fixed := sum(h)
	if fixed == m.fixed && m.c.Tools != nil {
		return
	}
	m.fixed = fixed
	// The system prompt and the tool schemas as the provider reads them
	// (decoded by wire, as the bench's bill and the replay count them),
	// not their JSON: escapes and keys are not tokens the model reads. The
	// engine never changes them. The client's compacted history counts
	// whole.
	sys, tools, err := fixedParts(req)
	if err != nil {
		// What wire cannot read is counted as it came.
		sys, tools = rawFixed(req), nil
		if req.ToolsSpan.ok() {
			tools = []conv.Tool{{Name: "tools", InputSchema: json.RawMessage(req.Body[req.ToolsSpan.s:req.ToolsSpan.e])}}
		}
	}
	for i, msg := range req.Messages {
		if i < req.Fixed {
			b := conv.NewText(conv.SourceSystem, string(req.Body[msg.Span.s:msg.Span.e]))
			sys = append(sys, b)
		}
	}
	for i := range sys {
		sys[i].ID = "system-" + strconv.Itoa(i)
	}
	m.c.System = sys
	if len(tools) == 0 {
		// A client that declares none (its calls are in the history)
		// still gets one, empty, as the engine's assembly wants.
		tools = []conv.Tool{{Name: "tools", InputSchema: json.RawMessage(`{}`)}}
	}
	m.c.Tools = tools
	if m.e != nil {
		bd := m.c.Tokens(m.e.Config().Counter)
		m.fixedTok = bd.System + bd.Tools
	}
}

// fixedParts decodes req's system prompt (its system or developer
// messages, a Responses request's instructions, Gemini's system
// instruction) and its tool schemas with the decoder of its API, from a
// body that holds only those.
func fixedParts(req *request) ([]conv.Block, []conv.Tool, error) {
	var b bytes.Buffer
	key := func(k string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:", k)
	}
	member := func(k string, sp span) {
		if sp.ok() {
			key(k)
			b.Write(req.Body[sp.s:sp.e])
		}
	}
	list := func(k string) {
		key(k)
		b.WriteByte('[')
		for n, i := range req.systemMessages() {
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(req.Body[req.Messages[i].Span.s:req.Messages[i].Span.e])
		}
		b.WriteByte(']')
	}
	b.WriteByte('{')
	member("tools", req.ToolsSpan)
	var decode func([]byte) (*llm.Request, error)
	switch req.API {
	case "messages":
		member("system", req.System)
		list("messages")
		decode = wire.DecodeAnthropic
	case "chat":
		list("messages")
		decode = wire.DecodeOpenAI
	case "responses":
		member("instructions", req.Instructions)
		list("input")
		decode = wire.DecodeResponses
	case "gemini":
		member("systemInstruction", req.System)
		decode = wire.DecodeGemini
	default:
		return nil, nil, fmt.Errorf("serve: no decoder for API %q", req.API)
	}
	b.WriteByte('}')
	d, err := decode(b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return d.System, d.Tools, nil
}

// rawFixed is req's system prompt as the client's JSON: the system value
// and the content of its system and developer messages.
func rawFixed(req *request) []conv.Block {
	var sys []conv.Block
	if req.System.ok() {
		sys = append(sys, conv.NewText(conv.SourceSystem, string(req.Body[req.System.s:req.System.e])))
	}
	if req.Instructions.ok() {
		sys = append(sys, conv.NewText(conv.SourceSystem, string(req.Body[req.Instructions.s:req.Instructions.e])))
	}
	for _, i := range req.systemMessages() {
		if c := req.Messages[i].Content; c.ok() {
			sys = append(sys, conv.NewText(conv.SourceSystem, string(req.Body[c.s:c.e])))
		}
	}
	return sys
}

// idLen is the fewest hex digits of a content hash a recall id has.
const idLen = 6

// id is a block's id, the recall id the engine names it by: the shortest
// prefix of its content hash, of at least idLen digits, that no other
// content of the conversation took first (ids are handed out in the
// history's order, so a mirror rebuilt from the history hands out the
// same ones), and a content used again gets "-2", "-3", … by the order of
// its uses. Originals are stored under the session and the id
// (store.OriginalKey).
func (m *mirror) id(hash string) string {
	n := m.used[hash]
	m.used[hash] = n + 1
	short, ok := m.short[hash]
	if !ok {
		base, tag, _ := strings.Cut(hash, "-") // a tag: "-head", "-empty"
		prefix := func(l int) string {
			if tag == "" {
				return base[:l]
			}
			return base[:l] + "-" + tag
		}
		l := min(idLen, len(base))
		for l < len(base) && m.taken[prefix(l)] {
			l++
		}
		short = prefix(l)
		m.taken[short] = true
		m.short[hash] = short
	}
	if n == 0 {
		return short
	}
	return short + "-" + strconv.Itoa(n+1)
}

// step brings the engine up to req: it appends the client's new messages
// and steps the engine at every request boundary among them (before each
// response, and at the end), as engine.Replay does for a recorded session.
// ok is false when req does not continue the mirror's conversation.
func (m *mirror) step(ctx context.Context, req *request, at time.Time) (engine.Ready, bool, error) {
	var out engine.Ready
	if !m.extends(req) {
		return out, false, nil
	}
	body := req.Body
	from := len(m.wire)
	m.zs.final = false
	// Group the new messages: consecutive messages of one role are one
	// conv message (OpenAI's tool messages and the user message after
	// them; a Responses reasoning item and the calls after it).
	type grp struct {
		role   conv.Role
		lo, hi int
	}
	var gs []grp
	for i := from; i < len(req.Messages); i++ {
		r := roleOf(req.Messages[i].Role)
		if req.fixed(i) {
			continue
		}
		if n := len(gs); n > 0 && gs[n-1].role == r {
			gs[n-1].hi = i + 1
			continue
		}
		gs = append(gs, grp{r, i, i + 1})
	}
	if len(gs) > 0 && len(m.c.Messages) > 0 && m.c.Messages[len(m.c.Messages)-1].Role == gs[0].role {
		return out, false, nil // the client added to a message already decided on
	}
	if len(gs) == 0 && from > 0 {
		return out, true, nil // the same history again (a retry): decided already
	}
	m.setFixed(req)
	for i := from; i < len(req.Messages); i++ {
		m.wire = append(m.wire, req.Messages[i].Hash)
		m.roles = append(m.roles, req.Messages[i].Role)
		m.nparts = append(m.nparts, 0)
	}
	arrived := 0
	if len(m.c.Messages) == 0 && len(gs) > 0 && gs[0].role == conv.RoleAssistant {
		// The conversation the engine sees begins with the client's
		// answer (after a Codex compaction item, the history before it
		// fixed): the engine's conversation begins with a user message,
		// so one stands for what came before. It has no bytes of its own.
		b := conv.NewText(conv.SourceSystem, "(the conversation before this point)")
		b.ID = m.id(req.Messages[gs[0].lo].Hash + "-head")
		m.groups[b.ID] = group{lo: gs[0].lo, hi: gs[0].lo, ids: []string{b.ID}}
		m.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{b}})
		arrived++
	}
	for k, g := range gs {
		cm := conv.Message{Role: g.role}
		var ids []string
		for i := g.lo; i < g.hi; i++ {
			msg := req.Messages[i]
			ps := partsOf(body, msg)
			m.nparts[i] = len(ps)
			for j, p := range ps {
				b := convBlock(body, msg, p, g.role)
				b.ID = m.id(partHash(body, msg, p))
				m.client += conv.BlockTokens(&b, m.e.Config().Counter)
				m.origin[b.ID] = origin{msg: i, part: j, kind: p.kind, role: msg.Role}
				ids = append(ids, b.ID)
				cm.Blocks = append(cm.Blocks, b)
			}
		}
		if len(cm.Blocks) == 0 {
			// An item the engine has nothing of (an empty message):
			// counted with its neighbours, kept as sent.
			b := conv.NewText(conv.SourceSystem, "(empty)")
			b.Meta.Pinned, b.Meta.Compactable = true, false
			b.ID = m.id(req.Messages[g.lo].Hash + "-empty")
			cm.Blocks = append(cm.Blocks, b)
			ids = append(ids, b.ID)
		}
		if g.role == conv.RoleAssistant {
			m.reasoningTokens(&cm)
			if m.resp < 0 {
				m.resp = len(m.c.Messages)
			}
		}
		m.groups[ids[0]] = group{lo: g.lo, hi: g.hi, ids: ids}
		m.c.Append(cm)
		arrived++
		// A request boundary: the client sent everything so far and the
		// next message is the response to it.
		if k+1 < len(gs) && gs[k+1].role == conv.RoleAssistant {
			if err := m.boundary(ctx, &out, arrived, requestKey(m.wire, g.hi), time.Time{}); err != nil {
				return out, true, err
			}
			arrived = 0
		}
	}
	m.zs.final = true
	if arrived > 0 || from == 0 {
		key, _ := m.keyOf(req, len(m.wire))
		if err := m.boundary(ctx, &out, arrived, key, at); err != nil {
			return out, true, err
		}
	}
	return out, true, nil
}

// boundary runs the engine for one request, named key, sent at the time
// at (zero: the history's, from what was observed): the oversize rule on
// the newest message, then the replay step (round ends, rungs 1–3), the
// provider's report on the previous response observed first.
func (m *mirror) boundary(ctx context.Context, out *engine.Ready, arrived int, key string, at time.Time) error {
	m.inputs(key, at)
	before := m.e.Saved()
	defer func() { m.saved = m.e.Saved() - before }()
	ar, err := m.e.Admit(ctx, m.c)
	for _, d := range ar.Decisions {
		m.pending.admitted += d.Blocks
	}
	merge(out, ar)
	if err != nil {
		return err
	}
	r, err := m.replay.Step(ctx, m.c, arrived)
	if err := m.took(out, r, err); err != nil {
		return err
	}
	if l, ok := m.refused[key]; ok {
		// The upstream refused this request for its size, and it went
		// again as the engine decided then (Server.resend).
		return m.retry(ctx, out, l)
	}
	return nil
}

// took adds what an engine call that builds the request (a replay step,
// a retry) decided to out, and makes its request out's — an overflow (the
// engine could cut no further) included, whose error it returns.
func (m *mirror) took(out *engine.Ready, r engine.Ready, err error) error {
	merge(out, r)
	var overflow *compact.OverflowError
	if err != nil && !errors.As(err, &overflow) {
		return err
	}
	out.Request, out.Tokens = r.Request, r.Tokens
	m.tokens = r.Tokens
	return err
}

// retry runs the engine's Retry on the request last stepped, which the
// upstream refused for its size, stating the sizes l (none: a zero
// Limit) — the call the agent's engine gets when its provider refuses a
// request — and makes out the request to send instead.
func (m *mirror) retry(ctx context.Context, out *engine.Ready, l llm.Limit) error {
	before := m.e.Saved()
	r, err := m.e.Retry(ctx, m.c, &llm.LimitError{Limit: l})
	m.saved += m.e.Saved() - before
	return m.took(out, r, err)
}

// merge adds what one engine call decided to out.
func merge(out *engine.Ready, r engine.Ready) {
	out.Edits = append(out.Edits, r.Edits...)
	out.Originals = append(out.Originals, r.Originals...)
	out.Decisions = append(out.Decisions, r.Decisions...)
	out.Warnings = append(out.Warnings, r.Warnings...)
	out.Micro.Cleared += r.Micro.Cleared
	out.Compaction.Compactions += r.Compaction.Compactions
	out.Compaction.Summaries = append(out.Compaction.Summaries, r.Compaction.Summaries...)
}

// keeperAdapter is the engine's Keeper: it notes, for the store, the
// original of every block an edit changes or removes the first time one
// does. They are stored before the decisions, once the upstream accepted
// the request (commit.go); until then the client holds them, in the
// history it sent.
type keeperAdapter struct {
	m      *mirror
	stored map[string]bool
}

// Keep implements engine.Keeper.
func (k *keeperAdapter) Keep(_ context.Context, ed conv.Edit, c *conv.Conversation) error {
	if k.stored == nil {
		k.stored = map[string]bool{}
	}
	want := map[string]bool{}
	for _, id := range ed.Affected(c) {
		if !k.stored[id] {
			want[id] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	uses := c.ToolUses()
	now := time.Now().UTC()
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			b := &c.Messages[i].Blocks[j]
			if !want[b.ID] {
				continue
			}
			k.stored[b.ID] = true
			o := store.Original{Hash: b.ID, Tool: b.Name, At: now}
			switch b.Type {
			case conv.TypeToolResult:
				o.Content = []byte(b.ResultText())
				if u := uses[b.ToolUseID]; u != nil {
					o.Label = keyArg(u.Input, span{0, len(u.Input)})
				}
			case conv.TypeToolUse:
				o.Content = b.Input
				o.Label = "tool call input"
			case conv.TypeText, conv.TypeSummary:
				o.Content = []byte(b.Text)
				o.Label = string(b.Meta.Source) + " text"
			default:
				continue // thinking and images are not recalled
			}
			k.m.pending.originals = append(k.m.pending.originals, o)
		}
	}
	return nil
}

// summarizerAdapter writes the engine's summaries through the upstream,
// with the client's credentials, on the client's own cached prefix where
// it can (summarize.go); a summary stored for the same region (by this
// proxy earlier, or another replica) is used as it is, so replicas agree.
// When the upstream cannot write one, the extractive summarizer does, and
// that is what is stored. Set per request: the request and its headers.
type summarizerAdapter struct {
	s       *Server
	m       *mirror
	req     *request
	h       http.Header
	session string
	final   bool          // the mirror holds all of req: the client's prefix can carry the summary
	spent   time.Duration // waiting for the upstream's summaries in this request
}

// regionKey names a region by its blocks' ids.
func regionKey(msgs []conv.Message) string {
	h := sha256.New()
	h.Write([]byte("summary\x00"))
	for i := range msgs {
		for j := range msgs[i].Blocks {
			h.Write([]byte(msgs[i].Blocks[j].ID))
			h.Write([]byte{0})
		}
	}
	return sum(h)
}

// Summarize implements summarize.Summarizer.
func (z *summarizerAdapter) Summarize(ctx context.Context, in summarize.Input) (summarize.Output, error) {
	key := regionKey(in.Messages)
	for _, p := range z.m.pending.summaries {
		if p.Key == key {
			return summarize.Output{Text: p.Text, Kind: kindOfMethod(p.Method)}, nil
		}
	}
	if st, err := z.s.st(ctx).Summary(ctx, key); err == nil {
		return summarize.Output{Text: st.Text, Kind: kindOfMethod(st.Method)}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return summarize.Output{}, fmt.Errorf("reading a stored summary: %w", err)
	}
	var idx []int
	seen := map[int]bool{}
	for i := range in.Messages {
		for j := range in.Messages[i].Blocks {
			if o, ok := z.m.origin[in.Messages[i].Blocks[j].ID]; ok && !seen[o.msg] {
				seen[o.msg] = true
				idx = append(idx, o.msg)
			}
		}
	}
	text, method := "", ""
	if len(idx) > 0 && z.req != nil {
		t0 := time.Now()
		text, method = z.s.summarizeRegion(ctx, z.h, z.req, z.m, idx, z.m.keptWords(z.req, in.Messages, idx), z.final, in.TargetTokens)
		z.spent += time.Since(t0)
	}
	if text == "" {
		out, err := summarize.NewExtractive().Summarize(ctx, in)
		if err != nil {
			return out, err
		}
		text, method = out.Text, "extractive"
	}
	z.m.pending.summaries = append(z.m.pending.summaries, store.Summary{Key: key, Session: z.session, Model: z.req.Model, Text: text, Method: method, At: time.Now().UTC()})
	z.m.pending.methods = append(z.m.pending.methods, method)
	return summarize.Output{Text: text, Kind: kindOfMethod(method)}, nil
}

func kindOfMethod(method string) string {
	if method == "model" {
		return "llm"
	}
	return method
}
