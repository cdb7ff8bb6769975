// Package jsonerr turns encoding/json errors into messages in the user's
// terms: the line and column of the problem and what was expected there,
// never a Go type or struct field name.
package jsonerr
