//go:build calib

package tokens

import (
	"os"
	"fmt"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

func TestProbeDivergence(t *testing.T) {
	re := regexp2.MustCompile(o200kPat, regexp2.None)
	sets := trainSets()
	shown := 0
	for _, text := range sets[os.Getenv("KIND")] {
		m, _ := re.FindStringMatch(text)
		prev := ""
		end := 0
		var sum int32
		lastDiff := int32(0)
		var hist []int32
		var desc []string
		for m != nil && shown < 40 {
			p := m.String()
			ctx := ""
			if c := p[0]; len(prev) > 0 && (c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80) {
				if l := prev[len(prev)-1]; l|0x20 >= 'a' && l|0x20 <= 'z' || l >= '0' && l <= '9' {
					ctx = prev[len(prev)-1:]
				}
			}
			c := defaultWeights.cost(ctx + p)
			if ctx != "" {
				c -= defaultWeights.cost(ctx)
			}
			sum += c
			end += len(p)
			whole := defaultWeights.cost(text[:end])
			d := whole - sum
			hist = append(hist, d)
			desc = append(desc, fmt.Sprintf("prev=%q piece=%q next=%q", prev, p, text[end:min(end+10, len(text))]))
			if k := len(hist) - 4; k >= 1 && hist[k] != hist[k-1] && hist[len(hist)-1] != hist[k-1] {
				t.Logf("diff %d→%d at %s", hist[k-1], hist[k], desc[k])
				shown++
			}
			_ = lastDiff
			prev = p
			m, _ = re.FindNextMatch(m)
		}
	}
}
