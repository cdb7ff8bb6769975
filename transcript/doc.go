// Package transcript keeps a session's durable record: one append-only
// JSONL file per session that holds every message and block as first
// produced and every later lossy change as its own record, so that nothing
// leaves the model's context before it is on disk (DESIGN.md, invariant 5),
// any cleared block can be recalled byte for byte, and a session can be
// resumed exactly as it was.
//
// # Session folder
//
// A session lives in its own folder, by default DefaultDir()/<id> with ids
// from NewSessionID (UTC time first, so they sort by age):
//
//	transcript.jsonl   the records
//	lock               flock'ed by the one Store writing the session
//	spill/<name>       files written by Spill (oversize tool output, pastes)
//	torn-*.jsonl       torn last records cut away by Open, kept just in case
//
// # Records
//
// Each line is one JSON object:
//
//	{"seq":7,"type":"message","crc":"9a3c01f2","data":{...}}
//
// seq counts records from 1 with no gaps; crc is the CRC-32C (Castagnoli),
// as 8 hex digits, of the decimal seq, a NUL byte, the type, a NUL byte and
// the exact bytes of data. The types and their data:
//
//	session  {"version":1,"id":"…","created":"…"} — always and only the first record
//	header   {"system":[blocks],"tools":[tools]} — replaces the previous header
//	message  a conv.Message ({"role","blocks","turn"}) exactly as appended
//	edit     a conv.Edit ({"kind":"rung"|"replace","reason","blocks","from","to","messages"})
//	         plus "seq", the conversation's Seq when the edit was kept
//	spill    {"name","path","size","crc"} — a file Spill made durable
//	state    the caller's state as of here, a JSON object (the agent's:
//	         the engine's account, engine.Account) — the last one counts
//
// Blocks are conv.Block in its JSON form. JSON cannot carry every string
// byte for byte (invalid UTF-8 would become U+FFFD) nor keep the spacing of
// raw JSON (it is compacted). Such fields are written as a readable
// stand-in and their original bytes go, base64, into the record's "raw"
// object, keyed by place ("3.0/text": block 3, its content block 0; "b1/…"
// and "m0:2/…" inside an edit; "s0/…" and "t0/…" in a header), so invalid
// UTF-8 round-trips instead of being rejected.
//
// # Durability
//
// Append, Keep, SetHeader, SetState and Spill write and fsync before they return. The
// first record goes in by rename, so a transcript never exists without it.
// Keep records an edit but does not apply it: the caller applies it after
// Keep returns, and Keep refuses (ErrNotDurable) an edit touching a block
// the transcript never received. A crash can leave at most a torn last
// line, a record whose write never completed and so was never acknowledged.
// Open takes a last line that is cut short or fails its checksum for torn:
// it reports it in Warnings, copies it to a torn-*.jsonl file and cuts it
// off before appending. A damaged line followed by more records is an error
// naming the line (*CorruptError, ErrCorrupt), and the file is left alone.
//
// # Replay
//
// Append takes messages whose blocks already carry their ids (append to the
// conv.Conversation first, then record its last message): ids are how
// edits and recall name blocks, so a block without one, or with one already
// recorded, is refused. Keep stamps the new blocks of a replace edit with
// the ids c.Apply will give them, so the record names them too.
//
// Open replays the records in order: a header sets the system blocks and
// tools, a message is appended as recorded (ids and turn included), an edit
// is applied with conv.Conversation.Apply after Seq is set to the recorded
// one. The result, Conversation, equals the state the writer had, rungs and
// Seq included (Seq counts ids seen in records and the Seq noted with each
// edit; an id handed out later to a block never recorded is not known). A
// Store keeps that state as it writes, too, which is how Keep checks an
// edit against what is on disk. Recall finds a block's first record through
// an index of block ids to file offsets built while loading, and decodes
// just that line.
//
// One Store writes a session at a time: Open and Create take a flock on the
// lock file (ErrLocked otherwise), which the kernel drops when the holder
// dies, so a crash never leaves a stale lock. OpenReadOnly takes no lock
// and can read a session while an agent writes it.
package transcript
