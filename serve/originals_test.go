package serve

import (
	"context"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// TestKeyOriginals: an original goes under its session's key for its
// recall id, unless another content is stored there already (the same
// short id handed out by another conversation of the session): then under
// the first free collision key, and the same content is never stored twice.
func TestKeyOriginals(t *testing.T) {
	ctx := context.Background()
	st := scoped(t, openStore(t, ""), testKey)
	if _, err := st.Commit(ctx, store.Session{ID: "cc:s"}, 0, nil); err != nil {
		t.Fatal(err)
	}
	base := store.OriginalKey("cc:s", "3fa9c2")
	steps := []struct {
		name    string
		id      string
		content string
		want    string
	}{
		{"first", "3fa9c2", "the agent's log", base},
		{"the same again", "3fa9c2", "the agent's log", base},
		{"another content, the same id", "3fa9c2", "the sub-agent's log", store.CollisionKey(base, 2)},
		{"that one again", "3fa9c2", "the sub-agent's log", store.CollisionKey(base, 2)},
		{"a third", "3fa9c2", "a third log", store.CollisionKey(base, 3)},
		{"another id", "77e0b1", "a file", store.OriginalKey("cc:s", "77e0b1")},
	}
	for _, tt := range steps {
		os := []store.Original{{Hash: tt.id, Tool: "Bash", Content: []byte(tt.content)}}
		if err := keyOriginals(ctx, st, "cc:s", os); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if os[0].Hash != tt.want || os[0].Session != "cc:s" {
			t.Fatalf("%s: stored under %q (session %q), want %q", tt.name, os[0].Hash, os[0].Session, tt.want)
		}
		if err := st.PutOriginals(ctx, os); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]string{base: "the agent's log", store.CollisionKey(base, 2): "the sub-agent's log", store.CollisionKey(base, 3): "a third log"} {
		if o, err := st.Original(ctx, key); err != nil || string(o.Content) != want {
			t.Errorf("%s holds %q, %v; want %q", key, o.Content, err, want)
		}
	}
}
