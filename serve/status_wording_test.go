package serve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// TestStatusPageCount: the status page counts its sessions in English
// ("1 recent session", not "1 recent sessions").
func TestStatusPageCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{1, "· 1 recent session</p>"}, {2, "· 2 recent sessions</p>"}} {
		var buf bytes.Buffer
		err := statusPage.Execute(&buf, struct {
			Window   int64
			Host     string
			Sessions []store.Session
			T        store.Totals
		}{0, "127.0.0.1:8788", make([]store.Session, tt.n), store.Totals{}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("%d sessions: the page does not say %q", tt.n, tt.want)
		}
	}
}
