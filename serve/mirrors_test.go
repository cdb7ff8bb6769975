package serve

import (
	"fmt"
	"testing"
)

// TestMirrorsFairShare: the mirror cache is bounded in all, and one
// tenant's many conversations never push out another's few.
func TestMirrorsFairShare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		max           int
		heavy, light  int // conversations each tenant opens, light's first
		wantLightKept int
	}{
		{"heavy floods", 8, 100, 3, 3},
		{"both over their share", 8, 100, 6, 4},
		{"room for all", 8, 4, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := newMirrors()
			ms.max = tc.max
			for i := range tc.light {
				ms.get(fmt.Sprintf("light-%d", i), "light", func() *mirror { return &mirror{} })
			}
			for i := range tc.heavy {
				ms.get(fmt.Sprintf("heavy-%d", i), "heavy", func() *mirror { return &mirror{} })
			}
			if n := ms.len(); n > tc.max {
				t.Fatalf("%d mirrors held, max %d", n, tc.max)
			}
			kept := 0
			for i := range tc.light {
				if _, ok := ms.m[fmt.Sprintf("light-%d", i)]; ok {
					kept++
				}
			}
			if kept != tc.wantLightKept {
				t.Errorf("light tenant keeps %d of %d conversations, want %d", kept, tc.light, tc.wantLightKept)
			}
			if _, ok := ms.m[fmt.Sprintf("heavy-%d", tc.heavy-1)]; !ok {
				t.Error("the heavy tenant's newest conversation was dropped")
			}
		})
	}
}
