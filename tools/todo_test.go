package tools

import (
	"slices"
	"testing"
)

func TestTodoWrite(t *testing.T) {
	s, _ := newSet(t, nil)
	if len(s.Todos()) != 0 {
		t.Fatal("new Set has todos")
	}
	todos := []Todo{
		{Content: "Read the failing test", Status: TodoCompleted},
		{Content: "Fix the parser", Status: TodoInProgress, ActiveForm: "Fixing the parser"},
		{Content: "Run go test", Status: TodoPending},
	}
	r := run(t, s, NameTodoWrite, map[string]any{"todos": todos})
	wantOK(t, r)
	d := r.Data.(*TodoData)
	if d.Completed != 1 || d.InProgress != 1 || d.Pending != 1 || !slices.Equal(d.Todos, todos) {
		t.Errorf("data %+v", d)
	}
	want := "Todo list updated: 3 items (1 completed, 1 in progress, 1 pending).\n[x] Read the failing test\n[>] Fix the parser\n[ ] Run go test"
	if r.Text != want {
		t.Errorf("text %q, want %q", r.Text, want)
	}
	got := s.Todos()
	if !slices.Equal(got, todos) {
		t.Errorf("Todos() = %v", got)
	}
	got[0].Content = "changed"
	if s.Todos()[0].Content == "changed" {
		t.Error("Todos() shares its slice")
	}
	// A bad list leaves the current one alone.
	wantError(t, run(t, s, NameTodoWrite, map[string]any{"todos": []Todo{{Content: "x", Status: "blocked"}}}), "status")
	if !slices.Equal(s.Todos(), todos) {
		t.Error("a refused list replaced the todos")
	}
	// An empty list clears it.
	r = run(t, s, NameTodoWrite, `{"todos":[]}`)
	wantOK(t, r)
	if len(s.Todos()) != 0 || r.Text != "Todo list updated: 0 items (0 completed, 0 in progress, 0 pending)." {
		t.Errorf("clear: %q %v", r.Text, s.Todos())
	}
	s.RestoreTodos(todos[:1])
	if !slices.Equal(s.Todos(), todos[:1]) {
		t.Error("RestoreTodos")
	}
}
