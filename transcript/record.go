package transcript

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
)

// Version is the record format version written in the session record.
const Version = 1

// Record types.
const (
	typeSession = "session"
	typeHeader  = "header"
	typeMessage = "message"
	typeEdit    = "edit"
	typeSpill   = "spill"
	typeState   = "state"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum covers the sequence number, the type and the payload, so a
// flipped byte anywhere that matters is caught.
func checksum(seq int64, typ string, data []byte) uint32 {
	h := crc32.Update(0, castagnoli, strconv.AppendInt(nil, seq, 10))
	h = crc32.Update(h, castagnoli, []byte{0})
	h = crc32.Update(h, castagnoli, []byte(typ))
	h = crc32.Update(h, castagnoli, []byte{0})
	return crc32.Update(h, castagnoli, data)
}

// envelope is one line of the file.
type envelope struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	CRC  string          `json:"crc"`
	Data json.RawMessage `json:"data"`
}

// encodeLine frames a payload as one line, newline included.
func encodeLine(seq int64, typ string, data []byte) []byte {
	var crc [4]byte
	sum := checksum(seq, typ, data)
	crc[0], crc[1], crc[2], crc[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	b := make([]byte, 0, len(data)+64)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","crc":"`...)
	b = hex.AppendEncode(b, crc[:])
	b = append(b, `","data":`...)
	b = append(b, data...)
	b = append(b, "}\n"...)
	return b
}

// decodeLine parses and verifies one line (without its newline).
func decodeLine(line []byte) (envelope, error) {
	var e envelope
	if !utf8.Valid(line) {
		return e, errors.New("not valid UTF-8")
	}
	if fe, ok := splitLine(line); ok {
		e = fe
	} else if err := json.Unmarshal(line, &e); err != nil {
		return e, fmt.Errorf("not a record: %w", err)
	}
	if e.Type == "" || len(e.Data) == 0 {
		return e, errors.New("not a record: type or data missing")
	}
	want, err := hex.DecodeString(e.CRC)
	if err != nil || len(want) != 4 {
		return e, fmt.Errorf("bad checksum field %q", e.CRC)
	}
	sum := checksum(e.Seq, e.Type, e.Data)
	if got := uint32(want[0])<<24 | uint32(want[1])<<16 | uint32(want[2])<<8 | uint32(want[3]); got != sum {
		return e, fmt.Errorf("checksum mismatch: recorded %08x, computed %08x", got, sum)
	}
	return e, nil
}

// splitLine reads a line in the exact layout encodeLine writes without
// scanning the payload, which is most of the line: the checksum vouches for
// it, and decoding the payload parses it anyway. Lines in any other layout
// (edited by hand, say) go through encoding/json.
func splitLine(line []byte) (envelope, bool) {
	var e envelope
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return e, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 1 || i > 19 {
		return e, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil || seq < 0 || rest[0] == '0' && i > 1 {
		return e, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"type":"`))
	if !ok {
		return e, false
	}
	i = bytes.IndexByte(rest, '"')
	if i < 1 || i > 32 {
		return e, false
	}
	typ := string(rest[:i])
	for _, r := range typ {
		if r < 'a' || r > 'z' {
			return e, false
		}
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`","crc":"`))
	if !ok || len(rest) < 8 {
		return e, false
	}
	crc := string(rest[:8])
	rest, ok = bytes.CutPrefix(rest[8:], []byte(`","data":`))
	if !ok {
		return e, false
	}
	data, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok || len(data) == 0 || data[0] != '{' {
		return e, false
	}
	return envelope{Seq: seq, Type: typ, CRC: crc, Data: data}, true
}

// Payloads. Each carries Raw: the exact bytes of fields that JSON cannot
// reproduce byte for byte (see exact).

type sessionPayload struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

type headerPayload struct {
	System []conv.Block `json:"system"`
	Tools  []conv.Tool  `json:"tools"`
	Raw    exact        `json:"raw,omitempty"`
}

type messagePayload struct {
	conv.Message
	Raw exact `json:"raw,omitempty"`
}

type editPayload struct {
	conv.Edit
	// Seq is the conversation's Seq when the edit was kept: replay sets it
	// before applying, so that every later id comes out the same.
	Seq int   `json:"seq"`
	Raw exact `json:"raw,omitempty"`
}

type spillPayload struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	CRC  string `json:"crc"`
}

// exact maps a field's place ("3.0/text": block 3, its content block 0,
// field text) to its original bytes, base64, for the fields JSON would not
// give back unchanged: strings that are not valid UTF-8 (JSON would turn the
// bad bytes into U+FFFD) and raw JSON that is not in compact form (encoding
// would compact it) or not valid UTF-8. The line itself then holds a
// readable stand-in.
type exact map[string]string

// blocks walks bs and their nested content, calling fn with each block's
// place.
func walk(prefix string, bs []conv.Block, fn func(key string, b *conv.Block)) {
	for i := range bs {
		key := prefix + strconv.Itoa(i)
		fn(key, &bs[i])
		walk(key+".", bs[i].Content, fn)
	}
}

func needsExact(bs []conv.Block) bool {
	found := false
	walk("", bs, func(_ string, b *conv.Block) {
		for _, s := range []*string{&b.Text, &b.Name, &b.ToolUseID, &b.Signature, &b.Data} {
			found = found || !utf8.ValidString(*s)
		}
		for _, r := range []*json.RawMessage{&b.Input, &b.Structured, &b.ImageSource, &b.CacheControl} {
			found = found || !rawStable(*r)
		}
	})
	return found
}

// rawStable reports whether encoding/json writes r back byte for byte.
func rawStable(r json.RawMessage) bool {
	if r == nil {
		return true
	}
	if !utf8.Valid(r) || !json.Valid(r) {
		return false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, r); err != nil {
		return false
	}
	return bytes.Equal(buf.Bytes(), r)
}

// take moves the fields of blocks that JSON cannot carry exactly into x,
// leaving stand-ins. bs must be a copy the caller owns.
func (x exact) take(prefix string, bs []conv.Block) {
	walk(prefix, bs, func(key string, b *conv.Block) {
		for _, f := range blockStrings(b) {
			if !utf8.ValidString(*f.p) {
				x[key+"/"+f.name] = base64.StdEncoding.EncodeToString([]byte(*f.p))
				*f.p = strings.ToValidUTF8(*f.p, "\uFFFD")
			}
		}
		for _, f := range blockRaws(b) {
			if !rawStable(*f.p) {
				x[key+"/"+f.name] = base64.StdEncoding.EncodeToString(*f.p)
				*f.p = nil
			}
		}
	})
}

// give puts the original bytes recorded in x back into bs.
func (x exact) give(prefix string, bs []conv.Block) error {
	if len(x) == 0 {
		return nil
	}
	var err error
	walk(prefix, bs, func(key string, b *conv.Block) {
		for _, f := range blockStrings(b) {
			if v, ok := x[key+"/"+f.name]; ok {
				raw, derr := base64.StdEncoding.DecodeString(v)
				if derr != nil {
					err = fmt.Errorf("raw field %s: %w", key+"/"+f.name, derr)
				}
				*f.p = string(raw)
			}
		}
		for _, f := range blockRaws(b) {
			if v, ok := x[key+"/"+f.name]; ok {
				raw, derr := base64.StdEncoding.DecodeString(v)
				if derr != nil {
					err = fmt.Errorf("raw field %s: %w", key+"/"+f.name, derr)
				}
				*f.p = raw
			}
		}
	})
	return err
}

type strField struct {
	name string
	p    *string
}

type rawField struct {
	name string
	p    *json.RawMessage
}

func blockStrings(b *conv.Block) []strField {
	return []strField{{"text", &b.Text}, {"name", &b.Name}, {"tool_use_id", &b.ToolUseID}, {"signature", &b.Signature}, {"data", &b.Data}}
}

func blockRaws(b *conv.Block) []rawField {
	return []rawField{{"input", &b.Input}, {"structured", &b.Structured}, {"image_source", &b.ImageSource}, {"cache_control", &b.CacheControl}}
}

func encodeMessage(m conv.Message) ([]byte, error) {
	p := messagePayload{Message: m}
	if needsExact(m.Blocks) {
		p.Raw = exact{}
		p.Blocks = conv.CloneBlocks(m.Blocks)
		p.Raw.take("", p.Blocks)
	}
	return jsonenc.Marshal(p)
}

func decodeMessage(data []byte) (conv.Message, error) {
	var p messagePayload
	if err := json.Unmarshal(data, &p); err != nil {
		return conv.Message{}, err
	}
	return p.Message, p.Raw.give("", p.Blocks)
}

// Edit places: "b<i>" for Blocks, "m<k>:<i>" for the blocks of Messages[k].
func encodeEdit(e conv.Edit, seq int) ([]byte, error) {
	p := editPayload{Edit: e, Seq: seq}
	dirty := needsExact(e.Blocks)
	for _, m := range e.Messages {
		dirty = dirty || needsExact(m.Blocks)
	}
	if dirty || !utf8.ValidString(e.Reason) {
		p.Raw = exact{}
		if !utf8.ValidString(e.Reason) {
			p.Raw["reason"] = base64.StdEncoding.EncodeToString([]byte(e.Reason))
			p.Reason = strings.ToValidUTF8(e.Reason, "\uFFFD")
		}
		p.Blocks = conv.CloneBlocks(e.Blocks)
		p.Raw.take("b", p.Blocks)
		p.Messages = make([]conv.Message, len(e.Messages))
		for k, m := range e.Messages {
			m.Blocks = conv.CloneBlocks(m.Blocks)
			p.Raw.take("m"+strconv.Itoa(k)+":", m.Blocks)
			p.Messages[k] = m
		}
	}
	return jsonenc.Marshal(p)
}

func decodeEdit(data []byte) (conv.Edit, int, error) {
	var p editPayload
	if err := json.Unmarshal(data, &p); err != nil {
		return conv.Edit{}, 0, err
	}
	if v, ok := p.Raw["reason"]; ok {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return conv.Edit{}, 0, fmt.Errorf("raw field reason: %w", err)
		}
		p.Reason = string(raw)
	}
	if err := p.Raw.give("b", p.Blocks); err != nil {
		return conv.Edit{}, 0, err
	}
	for k := range p.Messages {
		if err := p.Raw.give("m"+strconv.Itoa(k)+":", p.Messages[k].Blocks); err != nil {
			return conv.Edit{}, 0, err
		}
	}
	return p.Edit, p.Seq, nil
}

// Tool places: "t<i>/input_schema", "t<i>/cache_control".
func encodeHeader(system []conv.Block, tools []conv.Tool) ([]byte, error) {
	p := headerPayload{System: system, Tools: tools}
	dirty := needsExact(system)
	for _, t := range tools {
		dirty = dirty || !rawStable(t.InputSchema) || !rawStable(t.CacheControl)
	}
	if dirty {
		p.Raw = exact{}
		p.System = conv.CloneBlocks(system)
		p.Raw.take("s", p.System)
		p.Tools = append([]conv.Tool(nil), tools...)
		for i := range p.Tools {
			t := &p.Tools[i]
			for _, f := range []rawField{{"input_schema", &t.InputSchema}, {"cache_control", &t.CacheControl}} {
				if !rawStable(*f.p) {
					p.Raw["t"+strconv.Itoa(i)+"/"+f.name] = base64.StdEncoding.EncodeToString(*f.p)
					*f.p = nil
				}
			}
		}
	}
	return jsonenc.Marshal(p)
}

func decodeHeader(data []byte) ([]conv.Block, []conv.Tool, error) {
	var p headerPayload
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, nil, err
	}
	if err := p.Raw.give("s", p.System); err != nil {
		return nil, nil, err
	}
	for i := range p.Tools {
		t := &p.Tools[i]
		for _, f := range []rawField{{"input_schema", &t.InputSchema}, {"cache_control", &t.CacheControl}} {
			if v, ok := p.Raw["t"+strconv.Itoa(i)+"/"+f.name]; ok {
				raw, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return nil, nil, fmt.Errorf("raw field %s: %w", f.name, err)
				}
				*f.p = raw
			}
		}
	}
	return p.System, p.Tools, nil
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(make(json.RawMessage, 0, len(r)), r...)
}

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func crc32c(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }
