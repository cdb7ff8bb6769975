package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/transcript"
)

func newRecallCmd() *cobra.Command {
	var (
		session string
		lines   string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "recall --session DIR ID",
		Short: "Print the original content of a block from a session's transcript",
		Long: `Recall prints the original content of a block as the transcript first recorded
it, byte for byte: a tool result's text, a tool call's name and input, or a
message's text. Use it for blocks that were compressed, cleared to a
placeholder ("recall b17") or summarized.

--session is a session folder, or the id of a session under ~/.ctxkit/sessions.
The transcript is read without taking the session's lock, so a session an
agent is still running can be read.`,
		Example: `  ctxkit recall --session ~/.ctxkit/sessions/20260105-150405-123456-9f3a1c2e b17
  ctxkit recall --session 20260105-150405-123456-9f3a1c2e b17 --lines 40:80`,
		Args: oneArg("the id of a cleared block, as in ctxkit recall --session DIR b17"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if session == "" {
				return errors.New("recall: --session DIR is required")
			}
			from, to, err := parseLines(lines)
			if err != nil {
				return err
			}
			s, err := transcript.OpenReadOnly(sessionDir(session))
			if err != nil {
				return fmt.Errorf("recall: %w", err)
			}
			defer s.Close()
			for _, w := range s.Warnings() {
				fmt.Fprintln(cmd.ErrOrStderr(), "ctxkit: warning:", w)
			}
			id := args[0]
			if asJSON {
				b, err := s.Recall(id)
				if err != nil {
					return fmt.Errorf("recall: %w", err)
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				return enc.Encode(b)
			}
			text, err := transcript.RecallText(s, id, from, to)
			if err != nil {
				return fmt.Errorf("recall: %w", err)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), text)
			return err
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session folder, or a session id under ~/.ctxkit/sessions")
	cmd.Flags().StringVar(&lines, "lines", "", "print only lines A:B (1-based, inclusive; A: and :B leave an end open; A alone is one line)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole block as recorded, as JSON")
	return cmd
}

// sessionDir resolves --session: a folder holding a transcript, else a
// session id under the default sessions folder.
func sessionDir(s string) string {
	if _, err := os.Stat(filepath.Join(s, transcript.FileName)); !errors.Is(err, fs.ErrNotExist) {
		return s
	}
	if strings.ContainsRune(s, filepath.Separator) {
		return s
	}
	if d, err := transcript.DefaultDir(); err == nil {
		if _, err := os.Stat(filepath.Join(d, s, transcript.FileName)); err == nil {
			return filepath.Join(d, s)
		}
	}
	return s
}

// parseLines reads "A:B", "A:", ":B" or "A" into a 1-based inclusive range,
// 0 meaning open.
func parseLines(s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	bad := fmt.Errorf("recall: invalid --lines %q: want A:B, A:, :B or A (line numbers from 1)", s)
	a, b, colon := strings.Cut(s, ":")
	num := func(v string) (int, bool) {
		if v == "" {
			return 0, true
		}
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1
	}
	from, ok1 := num(a)
	to, ok2 := num(b)
	if !ok1 || !ok2 || a == "" && b == "" {
		return 0, 0, bad
	}
	if !colon {
		to = from
	}
	return from, to, nil
}
