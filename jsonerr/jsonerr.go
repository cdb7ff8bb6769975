package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Describe explains err, returned by decoding data, as "line L, column C:
// what was wrong". want describes the whole document ("a JSON object")
// for errors that have no better description.
func Describe(data []byte, err error, want string) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end"), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		if len(bytes.TrimSpace(data)) == 0 {
			return "the file is empty; expected " + want
		}
		return fmt.Sprintf("%s: the JSON ends too early (is the file cut short?)", Position(data, int64(len(data))))
	case errors.As(err, &se):
		return fmt.Sprintf("%s: %s", Position(data, se.Offset), syntax(se.Error()))
	case errors.As(err, &te):
		where := Position(data, te.Offset)
		what := Kind(te.Type)
		if te.Field != "" {
			return fmt.Sprintf("%s: %q must be %s, not %s", where, te.Field, what, value(te.Value))
		}
		return fmt.Sprintf("%s: expected %s, found %s", where, what, value(te.Value))
	}
	msg := err.Error()
	if strings.Contains(msg, "unknown field") {
		return strings.TrimPrefix(msg, "json: ")
	}
	return "expected " + want + ": " + strings.TrimPrefix(msg, "json: ")
}

// Position is "line L, column C" of byte offset off in data (1-based).
func Position(data []byte, off int64) string {
	off = max(min(off, int64(len(data))), 0)
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Kind names what a Go type holds in JSON's words.
func Kind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return Kind(t.Elem())
	}
	return "a value"
}

// value names a JSON value kind as encoding/json reports it.
func value(v string) string {
	switch {
	case v == "number" || strings.HasPrefix(v, "number "):
		return "a number"
	case v == "string":
		return "a string"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "an array"
	case v == "object":
		return "an object"
	case v == "null":
		return "null"
	}
	return v
}

// syntax rewords a json.SyntaxError message.
func syntax(msg string) string {
	msg = strings.TrimPrefix(msg, "json: ")
	msg = strings.Replace(msg, "invalid character", "unexpected character", 1)
	return msg
}
