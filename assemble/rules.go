package assemble

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// Rules are the project rules (L2): the text of the first rule file found
// in the workspace.
type Rules struct {
	File      string // the file's name, "" when none was found
	Text      string
	Truncated bool     // the file was longer than MaxRulesBytes
	Notes     []string // files skipped and why, for the user
}

// LoadRules reads the first of names found in the workspace ws (nil: none
// is found). Given an os.Root's FS, a rule file that is a symlink out of
// the workspace is not followed. A file that cannot be read is skipped
// with a note.
func LoadRules(ws Workspace, names []string, maxBytes int) (Rules, error) {
	var r Rules
	if ws == nil {
		return r, nil
	}
	for _, name := range names {
		f, err := ws.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s skipped: %v", name, err))
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
		f.Close()
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s skipped: %v", name, err))
			continue
		}
		if len(data) > maxBytes {
			data = []byte(cut(string(data), maxBytes))
			r.Truncated = true
			r.Notes = append(r.Notes, fmt.Sprintf("%s is longer than %d bytes; the rest was cut", name, maxBytes))
		}
		text := string(data)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
			r.Notes = append(r.Notes, fmt.Sprintf("%s is not valid UTF-8; invalid bytes were replaced", name))
		}
		if strings.TrimSpace(text) == "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s is empty", name))
			continue
		}
		r.File, r.Text = name, text
		return r, nil
	}
	return r, nil
}

// rulesText is the system block L2 is sent as.
func rulesText(r Rules) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "The project's rules, from %s in the workspace. Follow them unless the user says otherwise.\n", r.File)
	sb.WriteString(Wrap("project-rules", strings.TrimRight(r.Text, "\n")))
	if r.Truncated {
		fmt.Fprintf(&sb, "\n(%s was cut at %d bytes; read the rest with the Read tool if you need it.)", r.File, len(r.Text))
	}
	return sb.String()
}

// cut returns s cut to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
