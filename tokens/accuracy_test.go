package tokens

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// minSampleBytes is the size from which a single sample must meet the bound
// on its own; smaller ones count in their kind's total only.
const minSampleBytes = 2048

// maxUnder is how far below o200k the estimate may fall: 5%.
const maxUnder = 0.05

// testdataSamples reads testdata/<kind>/*: samples written for this package,
// so the bound is checked even without ../shared.
func testdataSamples(t testing.TB) []sample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sample{kind: filepath.Base(filepath.Dir(f)), src: f, text: string(b)})
	}
	if len(out) == 0 {
		t.Fatal("no testdata samples")
	}
	return out
}

type kindStats struct {
	samples, bytes, exact, estimate int
	worst                           float64 // lowest estimate/exact-1 of a sample ≥ minSampleBytes
	worstSrc                        string
	over                            float64 // highest
}

// checkAccuracy compares the estimator with o200k on samples, logs a table by
// kind under the title what, and fails where the estimate is under o200k by
// more than maxUnder.
func checkAccuracy(t *testing.T, what string, samples []sample) {
	exact, err := NewExact("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	est := NewEstimator()
	stats := map[string]*kindStats{}
	for _, s := range samples {
		st := stats[s.kind]
		if st == nil {
			st = &kindStats{worst: 1e9, over: -1e9}
			stats[s.kind] = st
		}
		x, e := exact.Count(s.text), est.Count(s.text)
		st.samples++
		st.bytes += len(s.text)
		st.exact += x
		st.estimate += e
		if len(s.text) < minSampleBytes || x == 0 {
			continue
		}
		r := float64(e)/float64(x) - 1
		if r < st.worst {
			st.worst, st.worstSrc = r, s.src
		}
		st.over = max(st.over, r)
		if r < -maxUnder {
			t.Errorf("%s sample from %s (%d bytes): estimate %d is %.1f%% under o200k %d; head %q",
				s.kind, s.src, len(s.text), e, -100*r, x, head(s.text))
		}
	}
	kinds := make([]string, 0, len(stats))
	for k := range stats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %7s %9s %9s %9s %7s %8s %8s %s\n", "kind", "samples", "bytes", "o200k", "estimate", "error", "min", "max", "bytes/token")
	for _, k := range kinds {
		st := stats[k]
		r := float64(st.estimate)/float64(st.exact) - 1
		fmt.Fprintf(&b, "%-6s %7d %9d %9d %9d %+6.1f%% %s %s %.2f\n", k, st.samples, st.bytes, st.exact, st.estimate,
			100*r, pct(st.worst), pct(st.over), float64(st.bytes)/float64(st.exact))
		if r < -maxUnder {
			t.Errorf("%s: estimate %d is %.1f%% under o200k %d in total", k, st.estimate, -100*r, st.exact)
		}
	}
	t.Logf("estimator against o200k_base, %s (min/max: samples ≥ %d bytes):\n%s", what, minSampleBytes, b.String())
}

func pct(r float64) string {
	if r > 1e8 || r < -1e8 {
		return fmt.Sprintf("%8s", "-")
	}
	return fmt.Sprintf("%+7.1f%%", 100*r)
}

func head(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

func TestAccuracyTestdata(t *testing.T) {
	checkAccuracy(t, "testdata", testdataSamples(t))
}

func TestAccuracyCorpus(t *testing.T) {
	if raceEnabled {
		// Decoding 3.5 MB of sessions and counting them exactly takes
		// minutes under the race detector, and the check is about numbers,
		// not races: it runs in the plain test run.
		t.Skip("skipping the corpus accuracy check under -race; run go test without -race for it")
	}
	samples := corpusSamples(t)
	if testing.Short() {
		var some []sample
		for i := 0; i < len(samples); i += 10 {
			some = append(some, samples[i])
		}
		t.Logf("-short: checking %d of %d corpus samples", len(some), len(samples))
		samples = some
	}
	// The corpus suggests three sessions to report on and tuning on the
	// rest (SOURCES.md); the estimator is not tuned on the corpus at all,
	// but its figures are shown apart so that they can be quoted as such.
	var tuning, test []sample
	for _, s := range samples {
		if isTestSession(s.src) {
			test = append(test, s)
		} else {
			tuning = append(tuning, s)
		}
	}
	checkAccuracy(t, "corpus without the test sessions", tuning)
	checkAccuracy(t, "the corpus's test sessions", test)
}

// testSessions are the sessions the corpus sets apart for reporting.
var testSessions = []string{"mclaude-c76e5be5", "openprintkit-97b66f6c", "deepseekchat-sqlfluff-1733"}

func isTestSession(src string) bool {
	for _, name := range testSessions {
		if strings.Contains(src, name) {
			return true
		}
	}
	return false
}

func TestAccuracySeeds(t *testing.T) {
	checkAccuracy(t, "seeds", seedSamples(t))
}
