package micro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Clearer runs rungs 1 and 2 before each request: it compresses ended
// rounds and clears consumed results when the policy says it pays. It keeps incremental
// state about the conversation it is stepped on, so that a step costs what
// the turn added, not the whole history; stepping it on a conversation that
// was changed in other ways (a summary replaced turns) makes it rebuild
// that state once. A Clearer is not safe for concurrent use.
type Clearer struct {
	cfg Config
	st  state
	// saved is what the session has saved against sending everything,
	// as the engine last gave it (SetSaved), for the policy (Batch.Saved);
	// accounted says it was given.
	saved     float64
	accounted bool
}

// New returns a Clearer with cfg, zero fields set to their defaults.
func New(cfg Config) *Clearer {
	return &Clearer{cfg: cfg.withDefaults()}
}

// Policy returns the policy in use.
func (m *Clearer) Policy() Policy { return m.cfg.Policy }

// Expire tells the Clearer that the provider's prompt cache has expired
// (the session sat idle past the cache's lifetime, or is being resumed):
// the next Step clears as if nothing were cached, which costs no rewrite.
func (m *Clearer) Expire() { m.st.cold = true }

// Reset forgets the incremental state; the next Step rebuilds it from the
// conversation. Call it after changing the conversation other than by
// appending messages, if the change might keep its message count and ids;
// after a compaction, call Compacted instead.
func (m *Clearer) Reset() {
	m.st = m.st.reset()
}

// reset is the state after Reset: what survives a rebuild is the request
// count, the clock, the cache's warmth and which message ended the
// previous request.
func (st state) reset() state {
	return state{requests: st.requests, cold: st.cold, last: st.last, prevID: st.prevID, grown: st.grown, growN: st.growN}
}

// Result is what one Step did.
type Result struct {
	// Edits are the edits kept and applied, in order: the oversize guard's
	// (reason "micro:guard") and the policy's ("micro:<policy>").
	Edits []conv.Edit
	// Compressed counts blocks moved to rung 1 (the guard's included),
	// Cleared blocks moved to rung 2.
	Compressed, Cleared int
	// Spilled counts results the guard wrote to files; BytesSpilled their
	// size.
	Spilled, BytesSpilled int
	// Freed is the tokens the applied edits freed; Deferred the tokens
	// that were clearable but kept because the policy said wait.
	Freed, Deferred int
	// Rewrite is what the policy's batch makes the provider write again
	// of the previous request, less what it frees (Batch.Suffix −
	// Batch.Freed; negative when it frees tokens the request writes
	// anyway): the tokens the change costs at the write premium.
	Rewrite int
	// Uncovered says the deferred results wait only for the session's
	// savings: a batch the policy would clear stakes more than the
	// session has saved (Batch.Saved).
	Uncovered bool
	// Tokens is the conversation's size after the step.
	Tokens int
}

// entry is what the Clearer knows about one tool result.
type entry struct {
	id       string
	msg, blk int // position, checked against id before use
	call     toolresult.Call
	callBlk  *conv.Block // the tool_use, nil when not seen
	tokens   int         // the block's tokens as it stands
	rung     conv.Rung
	chars    int              // size of the original, for the skip rule
	facts    toolresult.Facts // for the placeholder
	frozen   bool
	// preserved: on the preserve list; stale: a later call read the same
	// lines again or changed the file; pastK: older than the Keep most
	// recent consumed results; noRung1: compression would not shrink it.
	preserved, stale, pastK, noRung1 bool
	pend                             *offer
	// input: the entry is a tool call whose input is large enough for
	// rung 1 (toolresult.CompressInput), offered once its round has
	// ended; it is never cleared to a placeholder and does not count
	// among the Keep most recent results.
	input bool
	// recalled: the result of a recall call (Batch.Recalled).
	recalled bool
}

// offer is a pending move of one block down the ladder.
type offer struct {
	block conv.Block
	freed int
	rung  conv.Rung
	base  int // the block's tokens when the offer was made
	at    int // the request count when the block became clearable
}

type callInfo struct {
	call  toolresult.Call
	block *conv.Block
}

type state struct {
	seen            int // messages scanned
	firstID, lastID string
	lastN           int
	calls           map[string]callInfo // tool_use id → call, until its result is seen
	entries         []entry
	toks            fenwick // tokens per message
	consumed        int     // entries[:consumed] are followed by an assistant message
	boundary        int     // entries[:boundary] are older than the Keep most recent consumed
	roundStart      int     // message index of the current round's start
	waitRound       []int   // entries past the boundary waiting for their round to end (rung 1)
	waitInputs      []int   // input entries waiting for their round to end (rung 1)
	watch           map[string][]int
	guardQueue      []int
	pending         []int
	pendFreed       int
	requests        int
	prevLen         int // messages of the previous request: the cached prefix
	openFile        string
	cold            bool      // the cache has expired: nothing to rewrite
	last            time.Time // when the previous Step ran, with a Clock

	// The provider's cache as the anchors left it (see Hold): cuts are
	// the prefixes an earlier request wrote at an anchor and no change has
	// touched since, ascending; frontier is the latest batch's frontier (0:
	// none); hold the block ids handed out by Hold for the request being
	// built; prevID the id of the first block of the previous request's
	// last message, to find prevLen after a rebuild.
	cuts     []cut
	frontier int
	hold     []string
	prevID   string
	// outside is 1 + the first message another layer changed since the
	// last Step (Changed); 0 when none did.
	outside int

	// grown is the tokens appended over growN requests (scans that were
	// not rebuilds): how fast the context grows, to foresee compaction.
	grown, growN int
}

// Step runs before a request: it guards new oversize results, lowers
// results the model has consumed to rung 1 or 2 as the policy allows, and
// returns what it did. Every change is an Edit passed to k.Keep first and
// applied only when Keep succeeded; on an error, edits already kept stay
// applied (they are listed in the Result) and the rest is left for the
// next Step. The tool_use/tool_result pairing never changes.
// SetCompactAt moves the point where the engine expects to compact next
// (Config.CompactAt): the ladder's schedule moves it as the session goes.
func (m *Clearer) SetCompactAt(n int) { m.cfg.CompactAt = n }

// SetWindow sets Config.Window and Config.GuardTokens: the provider
// stated a smaller window than the one configured (engine.Engine.Retry),
// and the high-water mark and the oversize guard's limit follow it.
func (m *Clearer) SetWindow(n, guard int) {
	m.cfg.GuardTokens = guard
	if n > 0 {
		m.cfg.Window = n
	}
}

// SetSaved gives the Clearer what the session has saved so far against
// sending everything, in price × tokens (the engine's account), which the
// policy's batches carry from then on (Batch.Saved): a batch whose
// rewrite it does not cover waits. A Clearer never given it decides by
// the policy's rule alone.
func (m *Clearer) SetSaved(saved float64) { m.saved, m.accounted = saved, true }

func (m *Clearer) Step(ctx context.Context, c *conv.Conversation, k Keeper) (Result, error) {
	if m.cfg.Clock != nil {
		now := m.cfg.Clock()
		if !m.st.last.IsZero() && now.Sub(m.st.last) > m.cfg.CacheTTL {
			m.st.cold = true
		}
		m.st.last = now
	}
	return m.step(ctx, c, k, true)
}

// Compacted tells the Clearer that c was compacted after its Step and
// before the request goes out. That request writes everything after the
// summary to the provider's cache anyway, so a batch cleared now costs no
// rewrite, where the same batch cleared at a later request would: the
// Clearer rebuilds its state from c and clears what its rules allow as
// if the cache were cold. It is not another request (the policy's count is
// unchanged). Call it instead of Reset after a compaction.
func (m *Clearer) Compacted(ctx context.Context, c *conv.Conversation, k Keeper) (Result, error) {
	m.st = m.st.reset()
	m.st.cold = true
	return m.step(ctx, c, k, false)
}

func (m *Clearer) step(ctx context.Context, c *conv.Conversation, k Keeper, request bool) (Result, error) {
	var res Result
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if k == nil {
		return res, errors.New("micro: Step needs a Keeper: nothing may leave the context before its original is kept")
	}
	if !m.inSync(c) {
		m.st = m.st.reset()
	}
	rebuilt := m.st.seen == 0
	before := m.st.toks.total()
	m.scan(c)
	if rebuilt {
		m.st.prevLen = m.previous(c)
	} else if request {
		m.st.grown += m.st.toks.total() - before
		m.st.growN++
	}
	if m.st.cold {
		m.st.cuts, m.st.frontier = nil, 0
	}
	changed := len(c.Messages)
	if m.st.outside > 0 {
		// Another layer changed the history since the last Step: this
		// request changes the prompt from there, as if micro had.
		changed = min(changed, m.st.outside-1)
		m.st.outside = 0
	}
	if err := m.guardNew(ctx, c, k, &res, &changed); err != nil {
		return res, err
	}
	m.advance(c)
	if request {
		m.st.requests++
	}
	if m.st.pendFreed > 0 {
		if from, rewrite, ok := m.decide(c, &res); ok {
			if err := m.clear(ctx, c, k, &res, &changed, from); err != nil {
				return res, err
			}
			res.Rewrite += rewrite
		}
		res.Deferred = m.st.pendFreed
	}
	m.anchor(c, changed)
	m.st.prevLen = len(c.Messages)
	m.st.cold = false
	m.mark(c)
	res.Tokens = m.fixedTokens(c) + m.st.toks.total()
	return res, nil
}

// Hold returns the ids of the blocks after which the request about to be
// built should carry cache anchors (assemble.Builder.BuildHeld), valid
// until the next Step or Compacted: the deepest prefix the provider still
// holds before the first block this step changed, so that the request
// reads it, and the frontier of the latest batch — the end of the message
// before the oldest result still kept whole — below which nothing changes
// until a result there goes stale, so that the next batch reads up to it
// and rewrites only what lies after it. The policy's rewrite cost is
// figured from the same prefixes (see the package doc). Nil when there is
// nothing to hold, and when the provider caches every prefix by itself.
func (m *Clearer) Hold() []string {
	if len(m.st.hold) == 0 {
		return nil
	}
	return slices.Clone(m.st.hold)
}

// anchor brings the picture of the provider's cache up to date after this
// step changed messages from changed on, and chooses what to hold.
func (m *Clearer) anchor(c *conv.Conversation, changed int) {
	st := &m.st
	st.hold = st.hold[:0]
	n := len(c.Messages)
	if n == 0 || m.cfg.automatic() {
		return
	}
	read := 0
	if changed < st.prevLen {
		read = m.readCut(c, changed)
		st.touch(read)
		st.cuts = st.cuts[:st.cutsUpTo(changed)]
		f := n - 1
		if st.boundary < len(st.entries) {
			f = st.entries[st.boundary].msg
		}
		st.frontier = 0
		if f >= changed && f >= 1 {
			// At or after the change: this request writes it.
			st.frontier = f
			st.addCut(f)
		}
	} else {
		// This request reads the previous one's end, and the frontier
		// it holds: a held prefix is read (or written again) by every
		// request that carries its anchor, so it lives as long as it is
		// held, not CacheTTL after the batch that set it.
		st.touch(st.prevLen)
		st.touch(st.frontier)
	}
	st.addCut(n)
	for _, cut := range []int{read, st.frontier} {
		if cut < 1 || cut > n || len(c.Messages[cut-1].Blocks) == 0 {
			continue
		}
		id := c.Messages[cut-1].Blocks[len(c.Messages[cut-1].Blocks)-1].ID
		if !slices.Contains(st.hold, id) {
			st.hold = append(st.hold, id)
		}
	}
}

// cut is a cached prefix: the first n messages, written or last read by
// the request at time at (zero without a Clock).
type cut struct {
	n  int
	at time.Time
}

// cutsUpTo is how many cuts end at or before message q.
func (st *state) cutsUpTo(q int) int {
	return sort.Search(len(st.cuts), func(i int) bool { return st.cuts[i].n > q })
}

// addCut records that this request writes the prefix of the first n
// messages.
func (st *state) addCut(n int) {
	i, found := slices.BinarySearchFunc(st.cuts, n, func(c cut, n int) int { return c.n - n })
	if found {
		st.cuts[i].at = st.last
		return
	}
	st.cuts = slices.Insert(st.cuts, i, cut{n: n, at: st.last})
}

// touch records that this request reads the prefix of the first n
// messages: a read keeps the provider's entry alive.
func (st *state) touch(n int) {
	if i, found := slices.BinarySearchFunc(st.cuts, n, func(c cut, n int) int { return c.n - n }); found {
		st.cuts[i].at = st.last
	}
}

// readCut is the deepest cut at or before message q whose prefix is long
// enough to have been cached and, with a Clock, was written or read within
// CacheTTL: where a request changing message q reads the cache up to (0:
// the system prefix at most).
func (m *Clearer) readCut(c *conv.Conversation, q int) int {
	st := &m.st
	for i := st.cutsUpTo(q) - 1; i >= 0; i-- {
		k := st.cuts[i]
		if m.fixedTokens(c)+st.toks.prefix(k.n) < m.cfg.MinCacheTokens {
			return 0 // shorter ones are shorter still
		}
		if k.at.IsZero() || st.last.Sub(k.at) <= m.cfg.CacheTTL {
			return k.n
		}
	}
	return 0
}

// previous finds, after a rebuild, how many messages the previous request
// had: up to the message its last message's first block is in now (a
// compaction keeps the newest messages), else all but the newest step.
func (m *Clearer) previous(c *conv.Conversation) int {
	if id := m.st.prevID; id != "" {
		for i := len(c.Messages) - 1; i >= 0; i-- {
			if firstID(&c.Messages[i]) == id {
				return i + 1
			}
		}
	}
	return max(len(c.Messages)-2, 0)
}

func firstID(msg *conv.Message) string {
	if len(msg.Blocks) == 0 {
		return ""
	}
	return msg.Blocks[0].ID
}

// inSync reports whether c is the conversation last stepped, grown only by
// appended messages.
func (m *Clearer) inSync(c *conv.Conversation) bool {
	st := &m.st
	if st.seen == 0 {
		return true
	}
	if len(c.Messages) < st.seen {
		return false
	}
	last := &c.Messages[st.seen-1]
	return firstID(&c.Messages[0]) == st.firstID && firstID(last) == st.lastID && len(last.Blocks) == st.lastN &&
		st.toks.len() == st.seen
}

func (m *Clearer) mark(c *conv.Conversation) {
	if len(c.Messages) == 0 {
		return
	}
	m.st.firstID = firstID(&c.Messages[0])
	last := &c.Messages[len(c.Messages)-1]
	m.st.lastID, m.st.lastN = firstID(last), len(last.Blocks)
	m.st.prevID = m.st.lastID
}

// fixedTokens counts the system blocks and tool schemas.
func (m *Clearer) fixedTokens(c *conv.Conversation) int {
	n := 0
	for i := range c.System {
		n += conv.BlockTokens(&c.System[i], m.cfg.Counter)
	}
	for i := range c.Tools {
		n += conv.ToolTokens(&c.Tools[i], m.cfg.Counter)
	}
	return n
}

// scan reads the messages appended since the last step.
func (m *Clearer) scan(c *conv.Conversation) {
	st := &m.st
	if st.calls == nil {
		st.calls = map[string]callInfo{}
		st.watch = map[string][]int{}
	}
	for i := st.seen; i < len(c.Messages); i++ {
		msg := &c.Messages[i]
		if i > 0 && conv.OpensRound(*msg) {
			st.roundStart = i
			wait := st.waitRound
			st.waitRound = nil
			for _, j := range wait {
				m.offer(c, j, conv.RungCompressed)
			}
			inputs := st.waitInputs
			st.waitInputs = nil
			for _, j := range inputs {
				m.offer(c, j, conv.RungCompressed)
			}
		}
		st.toks.push(conv.MessageTokens(msg, m.cfg.Counter))
		for j := range msg.Blocks {
			b := &msg.Blocks[j]
			switch b.Type {
			case conv.TypeToolUse:
				m.callSeen(c, b)
				m.inputSeen(b, i, j)
			case conv.TypeToolResult:
				m.resultSeen(b, i, j)
			}
		}
	}
	st.seen = len(c.Messages)
}

func (m *Clearer) callSeen(c *conv.Conversation, b *conv.Block) {
	st := &m.st
	call := toolresult.Classify(b.Name, b.Input)
	// SWE-agent's viewer acts on the file it opened last.
	if call.Path == "" && (call.Kind == toolresult.KindEdit || call.Kind == toolresult.KindRead && call.Window) {
		call.Path = st.openFile
	}
	if call.Path != "" && (call.Kind == toolresult.KindRead && call.Window || call.Kind == toolresult.KindWrite) {
		st.openFile = call.Path
	}
	blk := *b
	st.calls[b.ToolUseID] = callInfo{call: call, block: &blk}
	switch call.Kind {
	case toolresult.KindRead, toolresult.KindEdit, toolresult.KindWrite:
		if call.Path != "" {
			m.touch(c, call)
		}
	}
}

// inputSeen makes an entry of a tool call whose input rung 1 would
// shrink: Write contents, Edit strings, patches, heredocs (package doc).
func (m *Clearer) inputSeen(b *conv.Block, i, j int) {
	st := &m.st
	if m.cfg.NoRung1 || b.Meta.Pinned || !b.Meta.Compactable || b.Meta.Rung >= conv.RungCompressed || len(b.Input) <= m.cfg.InputLimits.String {
		return
	}
	in, ok := toolresult.CompressInput(b.Input, b.ID, m.cfg.InputLimits)
	if !ok || !keepsFiles(b, in) {
		return
	}
	ci := st.calls[b.ToolUseID]
	e := entry{id: b.ID, msg: i, blk: j, call: ci.call, callBlk: ci.block, rung: b.Meta.Rung, input: true}
	e.tokens = conv.BlockTokens(b, m.cfg.Counter)
	e.chars = len(b.Input)
	st.waitInputs = append(st.waitInputs, len(st.entries))
	st.entries = append(st.entries, e)
}

// keepsFiles reports whether call with its input replaced by in still
// names every file the original wrote, edited, created or deleted, as
// the artifact trail reads them (summarize.CallOps). A command whose
// writes hide in the part cut away (a Python heredoc that opens a file
// for writing) keeps its input whole: the trail must not lose a file.
func keepsFiles(call *conv.Block, in json.RawMessage) bool {
	nb := *call
	nb.Input = in
	got := map[string]bool{}
	for _, op := range summarize.CallOps(&nb, nil) {
		got[op.Path] = true
	}
	for _, op := range summarize.CallOps(call, nil) {
		if op.Writes() && !got[op.Path] {
			return false
		}
	}
	return true
}

func (m *Clearer) resultSeen(b *conv.Block, i, j int) {
	st := &m.st
	ci, ok := st.calls[b.ToolUseID]
	if ok {
		delete(st.calls, b.ToolUseID)
	} else {
		ci.call = toolresult.Classify(b.Name, nil)
	}
	e := entry{id: b.ID, msg: i, blk: j, call: ci.call, callBlk: ci.block, rung: b.Meta.Rung}
	e.tokens = conv.BlockTokens(b, m.cfg.Counter)
	e.frozen = b.Meta.Pinned || !b.Meta.Compactable || b.Meta.Rung >= conv.RungPlaceholder
	e.chars = len(b.ResultText())
	for k := range b.Content {
		if b.Content[k].Type == conv.TypeImage {
			e.chars += 4 * conv.ImageTokens
		}
	}
	e.facts = toolresult.FactsOf(b, e.call)
	e.preserved = m.cfg.preserved(e.call)
	e.recalled = toolresult.IsRecall(e.call.Tool, m.cfg.RecallTool)
	idx := len(st.entries)
	if e.preserved && e.call.Kind == toolresult.KindRead && e.call.Path != "" && !e.frozen {
		key := fileKey(e.call.Path)
		st.watch[key] = append(st.watch[key], idx)
	}
	if !e.frozen && e.rung == conv.RungFull && m.cfg.GuardTokens >= 0 && e.tokens > m.cfg.GuardTokens {
		st.guardQueue = append(st.guardQueue, idx)
	}
	st.entries = append(st.entries, e)
}

// touch marks earlier reads of call's file stale when call changes the
// file or reads the same lines again, and offers the ones already past
// the Keep boundary for clearing.
func (m *Clearer) touch(c *conv.Conversation, call toolresult.Call) {
	st := &m.st
	key := fileKey(call.Path)
	list := st.watch[key]
	kept := list[:0]
	for _, idx := range list {
		e := &st.entries[idx]
		if e.rung >= conv.RungPlaceholder || e.frozen {
			continue
		}
		if !Stales(call, e.call) {
			kept = append(kept, idx)
			continue
		}
		e.stale = true
		if e.pastK && e.chars > m.cfg.SkipChars {
			m.offer(c, idx, conv.RungPlaceholder)
		}
	}
	if len(kept) == 0 {
		delete(st.watch, key)
	} else {
		st.watch[key] = kept
	}
}

// fileKey buckets watched reads by file name; samePath decides within a
// bucket.
func fileKey(p string) string { return path.Base(strings.ReplaceAll(p, `\`, "/")) }

// samePath reports whether two paths name the same file, one possibly
// relative to a folder the other spells out.
func samePath(a, b string) bool {
	a, b = path.Clean(strings.ReplaceAll(a, `\`, "/")), path.Clean(strings.ReplaceAll(b, `\`, "/"))
	if a == b {
		return true
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	return !path.IsAbs(b) && strings.HasSuffix(a, "/"+b)
}

// advance moves the consumed and Keep boundaries and classifies each
// result that crosses the latter.
func (m *Clearer) advance(c *conv.Conversation) {
	st := &m.st
	lastAsst := -1
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == conv.RoleAssistant {
			lastAsst = i
			break
		}
	}
	for st.consumed < len(st.entries) && st.entries[st.consumed].msg < lastAsst {
		st.consumed++
	}
	// The Keep most recent consumed results stay whole; call inputs do
	// not count among them.
	to := st.consumed
	for kept := 0; to > st.boundary && kept < m.cfg.Keep; {
		to--
		if !st.entries[to].input {
			kept++
		}
	}
	for i := st.boundary; i < to; i++ {
		m.cross(c, i)
	}
	st.boundary = to
}

// cross decides what happens to a result that is no longer among the Keep
// most recent consumed ones.
func (m *Clearer) cross(c *conv.Conversation, i int) {
	st := &m.st
	e := &st.entries[i]
	e.pastK = true
	if e.input || e.frozen || e.rung >= conv.RungPlaceholder || e.chars <= m.cfg.SkipChars {
		return
	}
	if !e.preserved || e.stale {
		m.offer(c, i, conv.RungPlaceholder)
		return
	}
	// Preserved and fresh: compressed once its round has ended, cleared
	// once stale.
	if e.msg < st.roundStart {
		m.offer(c, i, conv.RungCompressed)
	} else {
		st.waitRound = append(st.waitRound, i)
	}
}

// block returns the conversation's current block for e, nil when it is
// gone.
func (m *Clearer) block(c *conv.Conversation, e *entry) *conv.Block {
	if e.msg < len(c.Messages) && e.blk < len(c.Messages[e.msg].Blocks) && c.Messages[e.msg].Blocks[e.blk].ID == e.id {
		return &c.Messages[e.msg].Blocks[e.blk]
	}
	i, j := c.Find(e.id)
	if i < 0 {
		return nil
	}
	e.msg, e.blk = i, j
	return &c.Messages[i].Blocks[j]
}

// refresh brings entry i up to date with its block, which another layer
// may have changed in place (the agent compresses a finished round's
// results itself), and returns the block, nil when it is gone.
func (m *Clearer) refresh(c *conv.Conversation, i int) *conv.Block {
	e := &m.st.entries[i]
	cur := m.block(c, e)
	if cur == nil {
		e.frozen = true
		return nil
	}
	if n := conv.BlockTokens(cur, m.cfg.Counter); cur.Meta.Rung != e.rung || n != e.tokens {
		e.rung, e.tokens = cur.Meta.Rung, n
		if cur.Meta.Rung >= conv.RungPlaceholder || cur.Meta.Pinned || !cur.Meta.Compactable {
			e.frozen = true
		}
		m.st.toks.set(e.msg, conv.MessageTokens(&c.Messages[e.msg], m.cfg.Counter))
	}
	return cur
}

// build makes the rung-r form of entry e's block cur and says how many
// tokens it frees; false when it frees none.
func (m *Clearer) build(e *entry, cur *conv.Block, r conv.Rung) (conv.Block, int, bool) {
	var nb conv.Block
	if e.input {
		in, ok := toolresult.CompressInput(cur.Input, e.id, m.cfg.InputLimits)
		if r != conv.RungCompressed || !ok {
			return nb, 0, false
		}
		nb = cur.Clone()
		nb.Input = in
		nb.Meta.Rung = conv.RungCompressed
		nb.Meta.Tokens = 0
	} else if r == conv.RungCompressed {
		var ok bool
		if nb, ok = m.cfg.Compressor.Compress(cur, e.callBlk); !ok {
			return nb, 0, false
		}
	} else {
		nb = cur.Clone()
		nb.SetText(e.facts.PlaceholderFor(e.id, m.cfg.RecallTool), conv.RungPlaceholder)
		nb.Structured = nil
	}
	freed := e.tokens - conv.BlockTokens(&nb, m.cfg.Counter)
	return nb, freed, freed > 0
}

// offer makes result i a candidate for rung r, replacing a pending offer
// for a higher rung.
func (m *Clearer) offer(c *conv.Conversation, i int, r conv.Rung) {
	st := &m.st
	e := &st.entries[i]
	if r == conv.RungCompressed && (m.cfg.NoRung1 || e.noRung1) {
		return
	}
	cur := m.refresh(c, i)
	if cur == nil || e.frozen || e.rung >= r || e.pend != nil && e.pend.rung >= r {
		return
	}
	nb, freed, ok := m.build(e, cur, r)
	if !ok {
		if r == conv.RungCompressed {
			e.noRung1 = true
		}
		return
	}
	at := st.requests
	if e.pend != nil {
		st.pendFreed -= e.pend.freed
		at = e.pend.at
	} else {
		st.pending = append(st.pending, i)
	}
	e.pend = &offer{block: nb, freed: freed, rung: r, base: e.tokens, at: at}
	st.pendFreed += freed
}

// decide offers the policy the pending offers as batches and reports
// which to clear: pending[from:] once sorted, the largest batch the policy
// accepts, and its rewrite (Result.Rewrite). A batch is every pending
// offer from some position on: the first block decides where the
// provider's cached prefix ends and the rewrite begins, so an offer far
// back (a read gone stale) is also tried apart from the newer ones, which
// may pay on their own.
func (m *Clearer) decide(c *conv.Conversation, res *Result) (from, rewrite int, ok bool) {
	st := &m.st
	slices.Sort(st.pending)
	n := len(st.pending)
	// Suffix sums of what each batch frees and the rent it has paid: an
	// offer kept at the earlier requests since it was made paid its freed
	// tokens at each.
	freed := make([]int, n+1)
	rent := make([]int, n+1)
	recalled := make([]int, n+1)
	for j := n - 1; j >= 0; j-- {
		e := &st.entries[st.pending[j]]
		m.block(c, e)
		recalled[j] = recalled[j+1]
		if e.recalled {
			recalled[j]++
		}
		freed[j] = freed[j+1] + e.pend.freed
		rent[j] = rent[j+1] + e.pend.freed*max(st.requests-1-e.pend.at, 0)
	}
	total := m.fixedTokens(c) + st.toks.total()
	near := float64(total) >= m.cfg.HighWater*float64(m.cfg.Window)
	prevRead := -1
	for j := 0; j < n; j++ {
		if freed[j] <= 0 {
			break
		}
		e := &st.entries[st.pending[j]]
		suffix, read := m.suffix(c, e)
		if j > 0 && read == prevRead {
			continue // the same rewrite for less
		}
		prevRead = read
		b := Batch{
			Freed:     freed[j],
			Suffix:    suffix,
			Waited:    rent[j],
			Requests:  st.requests,
			Total:     total,
			Window:    m.cfg.Window,
			Near:      near,
			Recalled:  recalled[j],
			Saved:     m.saved,
			Accounted: m.accounted,
		}
		if at := m.cfg.CompactAt; at > 0 && st.growN > 0 && st.grown > 0 {
			// The context, less the batch, reaches the threshold after
			// this many more requests at the rate it has grown.
			b.Compaction = 1 + max(0, (at-total+b.Freed)*st.growN/st.grown)
		}
		if m.cfg.Policy.Clear(b) {
			return j, suffix - b.Freed, true
		}
		if b.Accounted {
			// Would the policy clear it but for the session's savings?
			b.Accounted = false
			res.Uncovered = res.Uncovered || m.cfg.Policy.Clear(b)
		}
	}
	return 0, 0, false
}

// suffix is T for a batch starting at e's block: the tokens of the
// previous request the provider must write again when the block changes,
// from the prefix it reads back to up to the request's end; and a key for
// where that prefix ends (the cut, or with automatic caching the block's
// position; -2 when nothing is rewritten), to tell batches with the same
// rewrite.
func (m *Clearer) suffix(c *conv.Conversation, e *entry) (int, int) {
	return m.suffixAt(c, e.msg, e.blk)
}

func (m *Clearer) suffixAt(c *conv.Conversation, msg, blk int) (int, int) {
	st := &m.st
	if msg >= st.prevLen || st.cold {
		return 0, -2
	}
	if m.cfg.automatic() {
		// Every prefix is cached: the request reads up to the block.
		t := st.toks.prefix(st.prevLen) - st.toks.prefix(msg)
		for j := 0; j < blk && j < len(c.Messages[msg].Blocks); j++ {
			t -= conv.BlockTokens(&c.Messages[msg].Blocks[j], m.cfg.Counter)
		}
		return t, msg<<16 | blk
	}
	// Only anchored prefixes are cached: the request reads up to the
	// deepest one before the block and writes the rest.
	r := m.readCut(c, msg)
	return st.toks.prefix(st.prevLen) - st.toks.prefix(r), r
}

// Rewrite is what a change to message msg of c, made before the next
// request, makes the provider write again of what it holds from the
// previous request: Batch.Suffix's T, from the deepest prefix the
// provider can still read before msg (by the picture Step keeps; see
// the package doc) to the previous request's end. 0 when msg lies past
// the previous request or the cache is cold (with a Clock, more than
// CacheTTL since the last Step); the whole previous request when c is
// not the conversation last stepped, grown by appended messages. For a
// caller that changes c between Steps (the engine's rung 1 at a round's
// end), so that its arithmetic is micro's.
func (m *Clearer) Rewrite(c *conv.Conversation, msg int) int {
	st := &m.st
	if st.seen == 0 || !m.inSync(c) {
		n := 0
		for i := range min(st.prevLen, len(c.Messages)) {
			n += conv.MessageTokens(&c.Messages[i], m.cfg.Counter)
		}
		return n
	}
	if m.cfg.Clock != nil && !st.last.IsZero() && m.cfg.Clock().Sub(st.last) > m.cfg.CacheTTL {
		return 0
	}
	t, _ := m.suffixAt(c, msg, 0)
	return t
}

// Changed tells the Clearer that a caller changed message msg of c (and
// maybe later ones) in place since the last Step, as the engine's rung 1
// at a round's end does after pricing the change with Rewrite. The next
// Step treats its request as changing the prompt from msg, as it treats
// its own batches: Hold then names the deepest prefix the provider still
// holds before msg, which that request reads (the prefix Rewrite priced
// the change by), and the frontier moves to the change; prefixes cached
// past msg are forgotten. Without it the request would carry no anchor
// before the change and write the prompt again from the system prompt on.
func (m *Clearer) Changed(c *conv.Conversation, msg int) {
	st := &m.st
	if st.seen == 0 || msg < 0 || !m.inSync(c) {
		return // the next Step rebuilds its picture anyway
	}
	if msg >= st.seen {
		return // past what Step has seen: appended, not changed
	}
	if st.outside == 0 || msg < st.outside-1 {
		st.outside = msg + 1
	}
	for i := msg; i < st.seen; i++ {
		st.toks.set(i, conv.MessageTokens(&c.Messages[i], m.cfg.Counter))
	}
}

// clear keeps and applies the pending offers pending[from:] (sorted) as
// one edit; the others stay pending.
func (m *Clearer) clear(ctx context.Context, c *conv.Conversation, k Keeper, res *Result, changed *int, from int) error {
	st := &m.st
	slices.Sort(st.pending)
	keep := st.pending[:from:from]
	var idx []int
	var blocks []conv.Block
	for _, i := range st.pending[from:] {
		e := &st.entries[i]
		rung := e.rung
		cur := m.refresh(c, i)
		if cur != nil && !e.frozen && e.rung < e.pend.rung && (e.rung != rung || e.tokens != e.pend.base) {
			// Changed in place since the offer: offer it afresh.
			if nb, freed, ok := m.build(e, cur, e.pend.rung); ok {
				st.pendFreed += freed - e.pend.freed
				e.pend = &offer{block: nb, freed: freed, rung: e.pend.rung, base: e.tokens, at: e.pend.at}
			} else {
				cur = nil
			}
		}
		if cur == nil || e.frozen || e.rung >= e.pend.rung {
			st.pendFreed -= e.pend.freed
			e.pend = nil
			continue
		}
		idx = append(idx, i)
		blocks = append(blocks, e.pend.block)
	}
	if len(blocks) == 0 {
		st.pending = keep
		return nil
	}
	edit := conv.Edit{Kind: conv.EditRung, Reason: "micro:" + m.cfg.Policy.Name(), Blocks: blocks}
	if err := k.Keep(ctx, edit, c); err != nil {
		return fmt.Errorf("micro: keep: %w", err)
	}
	touched := map[int]bool{}
	for _, i := range idx {
		e := &st.entries[i]
		c.Messages[e.msg].Blocks[e.blk] = e.pend.block.Clone()
		touched[e.msg] = true
		*changed = min(*changed, e.msg)
		res.Freed += e.pend.freed
		st.pendFreed -= e.pend.freed
		if e.pend.rung == conv.RungPlaceholder {
			res.Cleared++
		} else {
			res.Compressed++
		}
		e.rung = e.pend.rung
		e.tokens -= e.pend.freed
		e.pend = nil
	}
	m.retally(c, touched)
	res.Edits = append(res.Edits, edit)
	st.pending = keep
	return nil
}

// retally recounts the tokens of the messages an edit touched.
func (m *Clearer) retally(c *conv.Conversation, touched map[int]bool) {
	for i := range touched {
		m.st.toks.set(i, conv.MessageTokens(&c.Messages[i], m.cfg.Counter))
	}
}

// guardNew spills new results over the size limit.
func (m *Clearer) guardNew(ctx context.Context, c *conv.Conversation, k Keeper, res *Result, changed *int) error {
	st := &m.st
	if len(st.guardQueue) == 0 {
		return nil
	}
	sp, _ := k.(Spiller)
	var idx []int
	var blocks []conv.Block
	spilled := 0
	for _, i := range st.guardQueue {
		e := &st.entries[i]
		cur := m.block(c, e)
		if cur == nil || cur.Meta.Rung != conv.RungFull {
			continue
		}
		nb, ok, err := m.guard(ctx, cur, e.callBlk, sp)
		if err != nil {
			return err
		}
		if ok {
			idx = append(idx, i)
			blocks = append(blocks, nb)
			spilled += len(cur.ResultText())
		}
	}
	if len(blocks) > 0 {
		edit := conv.Edit{Kind: conv.EditRung, Reason: "micro:guard", Blocks: blocks}
		if err := k.Keep(ctx, edit, c); err != nil {
			return fmt.Errorf("micro: keep: %w", err)
		}
		touched := map[int]bool{}
		for n, i := range idx {
			e := &st.entries[i]
			c.Messages[e.msg].Blocks[e.blk] = blocks[n].Clone()
			touched[e.msg] = true
			*changed = min(*changed, e.msg)
			nt := conv.BlockTokens(&c.Messages[e.msg].Blocks[e.blk], m.cfg.Counter)
			res.Freed += e.tokens - nt
			e.tokens, e.rung, e.noRung1 = nt, conv.RungCompressed, true
		}
		m.retally(c, touched)
		res.Edits = append(res.Edits, edit)
		res.Compressed += len(blocks)
		res.Spilled += len(blocks)
		if sp != nil {
			res.BytesSpilled += spilled
		}
	}
	st.guardQueue = nil
	return nil
}
