// Package textfmt formats short texts for people: numbers with thousands
// separators, and texts cut to a length or to their first line, for
// placeholders, reports and questions.
package textfmt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Thousands formats n with commas between groups of three digits:
// 1234567 is "1,234,567".
func Thousands(n int) string {
	if n < 0 {
		return "-" + Thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Count writes a count with its noun: "1 result", "2 results".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Clip shortens s to at most n runes, the last of them "…" when it cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Prefix returns the first n runes of s, without a mark.
func Prefix(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// ClipMiddle keeps the head (two thirds) and the tail of s when it is
// longer than n runes, saying how many runes it left out between them.
func ClipMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n * 2 / 3
	tail := n - head
	return string(r[:head]) + fmt.Sprintf(" […%d chars…] ", len(r)-head-tail) + string(r[len(r)-tail:])
}

// FirstLine returns the first line of s with the space around s trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// OneLine collapses every run of white space in s, newlines included, to
// one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
