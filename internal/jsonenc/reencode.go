package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Reencode reads one JSON value from dec and writes it to out compactly:
// object keys in the order given, strings without HTML escaping, numbers
// as spelled (dec must use json.Number). A member whose key drop reports
// true is left out (at any depth); every string value (keys untouched) is
// passed through str. Either function may be nil.
func Reencode(dec *json.Decoder, out *bytes.Buffer, drop func(key string) bool, str func(string) string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			first := true
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("object key %v", k)
				}
				if drop != nil && drop(key) {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
				if !first {
					out.WriteByte(',')
				}
				first = false
				writeString(out, key)
				out.WriteByte(':')
				if err := Reencode(dec, out, drop, str); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for n := 0; dec.More(); n++ {
				if n > 0 {
					out.WriteByte(',')
				}
				if err := Reencode(dec, out, drop, str); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte(']')
		default:
			return fmt.Errorf("unexpected %v", t)
		}
	case string:
		if str != nil {
			t = str(t)
		}
		writeString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %v", t)
	}
	return nil
}

// writeString writes s as a JSON string without escaping HTML.
func writeString(out *bytes.Buffer, s string) {
	b, _ := Marshal(s) // a string always encodes
	out.Write(b)
}
