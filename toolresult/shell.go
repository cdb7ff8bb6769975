package toolresult

import "strings"

// A small shell lexer, enough to tell what a one-line agent command does:
// words with quotes and escapes resolved, the control operators that split
// commands, redirections with their targets, and here-documents skipped.
// It never fails: text it cannot make sense of just ends up as words, and
// the caller falls back to treating the command as a plain shell command.
// (A full parser such as mvdan.cc/sh would reject much of what agents
// type, e.g. SWE-agent's multi-line `edit` blocks, so it would need this
// fallback anyway.)

// simpleCmd is one command of a pipeline.
type simpleCmd struct {
	args    []string // words, quotes removed
	out     []string // targets of > and >>
	heredoc bool     // reads a here-document
}

// pipeline is commands joined by |.
type pipeline []simpleCmd

// parseShell splits src into pipelines separated by ;, &&, ||, & and
// newlines.
func parseShell(src string) []pipeline {
	var (
		pls      []pipeline
		pl       pipeline
		cmd      simpleCmd
		word     strings.Builder
		inWord   bool
		redirect string // pending redirection operator waiting for its target
		heredocs []string
	)
	flushWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		switch redirect {
		case "":
			cmd.args = append(cmd.args, w)
		case ">", ">>", "&>", ">|":
			cmd.out = append(cmd.out, w)
		case "<<", "<<-":
			heredocs = append(heredocs, w)
			cmd.heredoc = true
		}
		// "<" targets are dropped: where input comes from does not matter.
		redirect = ""
	}
	endCmd := func() {
		flushWord()
		if len(cmd.args) > 0 || len(cmd.out) > 0 || cmd.heredoc {
			pl = append(pl, cmd)
		}
		cmd = simpleCmd{}
	}
	endPipeline := func() {
		endCmd()
		if len(pl) > 0 {
			pls = append(pls, pl)
		}
		pl = nil
	}
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case ch == '\\' && i+1 < len(src):
			if src[i+1] == '\n' { // line continuation
				i++
				continue
			}
			word.WriteByte(src[i+1])
			inWord = true
			i++
		case ch == '\'':
			j := strings.IndexByte(src[i+1:], '\'')
			if j < 0 {
				j = len(src) - i - 1
			}
			word.WriteString(src[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			i++
			for ; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' && i+1 < len(src) && strings.IndexByte("\"\\$`", src[i+1]) >= 0 {
					i++
				}
				word.WriteByte(src[i])
			}
			inWord = true
		case ch == '#' && !inWord:
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case ch == ' ' || ch == '\t' || ch == '\r':
			flushWord()
		case ch == '\n':
			endPipeline()
			// Skip the bodies of here-documents opened on this line.
			for _, delim := range heredocs {
				for i+1 < len(src) {
					end := strings.IndexByte(src[i+1:], '\n')
					line := src[i+1:]
					if end >= 0 {
						line = src[i+1 : i+1+end]
					}
					if end < 0 {
						i = len(src)
					} else {
						i += end + 1
					}
					if strings.TrimSpace(line) == delim {
						break
					}
				}
			}
			heredocs = nil
		case ch == ';':
			endPipeline()
		case ch == '&':
			switch {
			case strings.HasPrefix(src[i:], "&&"):
				endPipeline()
				i++
			case strings.HasPrefix(src[i:], "&>"):
				flushWord()
				redirect = "&>"
				i++
			default:
				endPipeline()
			}
		case ch == '|':
			if strings.HasPrefix(src[i:], "||") {
				endPipeline()
				i++
			} else {
				endCmd()
			}
		case ch == '>' || ch == '<':
			// A word made only of digits right before is a file descriptor.
			if inWord && isDigits(word.String()) {
				word.Reset()
				inWord = false
			}
			flushWord()
			op := string(ch)
			for _, long := range []string{"<<<", "<<-", ">>", "<<", ">&", "<&", ">|"} {
				if strings.HasPrefix(src[i:], long) {
					op = long
					break
				}
			}
			i += len(op) - 1
			switch op {
			case ">&", "<&": // 2>&1: the target is a descriptor
				j := i + 1
				for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '-') {
					j++
				}
				i = j - 1
			case "<", "<<<":
				redirect = "<" // its target is consumed and ignored
			default:
				redirect = op
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	endPipeline()
	return pls
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
