package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// Todo is one item of the agent's todo list.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"`
	// ActiveForm is the item in the present continuous ("Running the
	// tests"), shown while it is in progress; optional.
	ActiveForm string `json:"activeForm,omitempty"`
}

// TodoData is the Data of a TodoWrite result: the whole new list and how
// many items are in each status.
type TodoData struct {
	Todos      []Todo `json:"todos"`
	Pending    int    `json:"pending"`
	InProgress int    `json:"in_progress"`
	Completed  int    `json:"completed"`
}

type todoInput struct {
	Todos []Todo `json:"todos"`
}

func (s *Set) todoWrite(_ context.Context, input json.RawMessage) Result {
	return runTool(NameTodoWrite, input, func(in *todoInput) Result {
		d := &TodoData{Todos: slices.Clone(in.Todos)}
		if d.Todos == nil {
			d.Todos = []Todo{}
		}
		for i, t := range d.Todos {
			if strings.TrimSpace(t.Content) == "" {
				return failf(nil, "todo %d has no content", i+1)
			}
			switch t.Status {
			case TodoPending:
				d.Pending++
			case TodoInProgress:
				d.InProgress++
			case TodoCompleted:
				d.Completed++
			default:
				return failf(nil, "todo %d (%q) has status %q; use pending, in_progress or completed", i+1, t.Content, t.Status)
			}
		}
		s.mu.Lock()
		s.todos = slices.Clone(d.Todos)
		s.mu.Unlock()
		text := fmt.Sprintf("Todo list updated: %s (%d completed, %d in progress, %d pending).", plural(len(d.Todos), "item"), d.Completed, d.InProgress, d.Pending)
		if len(d.Todos) > 0 {
			text += "\n" + FormatTodos(d.Todos)
		}
		return Result{Status: StatusOK, Data: d, Text: text}
	})
}

// Todos returns the current todo list (for assembly's L5 recap).
func (s *Set) Todos() []Todo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.todos)
}

// RestoreTodos sets the todo list without a tool call, for a resumed
// session whose last TodoWrite is in its transcript.
func (s *Set) RestoreTodos(todos []Todo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.todos = slices.Clone(todos)
}

// FormatTodos renders a todo list as a checklist, one item a line:
// "[x]" completed, "[>]" in progress, "[ ]" pending.
func FormatTodos(todos []Todo) string {
	var sb strings.Builder
	for i, t := range todos {
		if i > 0 {
			sb.WriteByte('\n')
		}
		switch t.Status {
		case TodoCompleted:
			sb.WriteString("[x] ")
		case TodoInProgress:
			sb.WriteString("[>] ")
		default:
			sb.WriteString("[ ] ")
		}
		sb.WriteString(t.Content)
	}
	return sb.String()
}
