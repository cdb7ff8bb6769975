package main

import (
	"context"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/secret"
)

// redactStore puts a session's transcript behind a secret.Redactor: a key
// value that reaches a message (pasted by the user, or from a tool the
// redaction in tools missed) is not written to disk, nor spilled.
type redactStore struct {
	agent.Store
	r *secret.Redactor
}

func (s redactStore) Append(ctx context.Context, m conv.Message) error {
	return s.Store.Append(ctx, s.r.Message(m))
}

func (s redactStore) Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error {
	e.Blocks = s.r.Blocks(e.Blocks)
	if len(e.Messages) > 0 {
		ms := make([]conv.Message, len(e.Messages))
		for i, m := range e.Messages {
			ms[i] = s.r.Message(m)
		}
		e.Messages = ms
	}
	return s.Store.Keep(ctx, e, c)
}

func (s redactStore) Spill(ctx context.Context, name string, data []byte) (string, error) {
	return s.Store.Spill(ctx, name, s.r.Bytes(data))
}

func (s redactStore) SetHeader(ctx context.Context, system []conv.Block, tools []conv.Tool) error {
	return s.Store.SetHeader(ctx, s.r.Blocks(system), tools)
}
