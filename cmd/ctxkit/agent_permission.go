package main

import (
	"context"
	"strings"

	"github.com/ctxkit/ctxkit/permission"
)

// askPermission asks the user about a tool call at the REPL's prompt:
// y runs it once, a runs it and allows the suggested rule (or "a RULE")
// for the session, n denies it ("n REASON" tells the model why). Ctrl-C
// cancels the turn and with it the call.
func (r *repl) askPermission(ctx context.Context, req permission.Request) (permission.Answer, error) {
	r.ui.finish()
	var sb strings.Builder
	for l := range strings.SplitSeq(strings.TrimSuffix(req.Preview, "\n"), "\n") {
		sb.WriteString("  │ " + l + "\n")
	}
	r.ui.printf("Allow %s?\n%s  y: yes, once · a: always, for this session: %s (or a RULE) · n: no (n REASON tells the model why)\n", req.Subject, sb.String(), req.Suggest)
	line, err := r.readLine(ctx)
	if err != nil {
		return permission.Answer{}, err
	}
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "y", "yes":
		return permission.Answer{Allow: true}, nil
	case "a", "always":
		rule := req.Suggest
		if rest != "" {
			rule = rest
		}
		r.ui.printf("Allowed %s for this session.\n", rule)
		return permission.Answer{Allow: true, Rule: rule}, nil
	case "n", "no":
		return permission.Answer{Reason: rest}, nil
	}
	// Anything else is a denial, and what was typed is the reason.
	return permission.Answer{Reason: strings.TrimSpace(line)}, nil
}

// readLine waits for a line of input or for ctx to end.
func (r *repl) readLine(ctx context.Context) (string, error) {
	r.startRead()
	select {
	case l := <-r.lines:
		r.reading = false
		return l.text, l.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
