package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var benchOnce struct {
	sync.Once
	text string
}

// benchText returns about 1 MB of mixed text — the package's testdata
// samples of every kind, repeated — so the benchmarks run without ../shared.
func benchText(b *testing.B) string {
	benchOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
		var parts []string
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err == nil {
				parts = append(parts, string(data))
			}
		}
		mixed := strings.Join(parts, "\n")
		if mixed == "" {
			return
		}
		benchOnce.text = strings.Repeat(mixed, 1<<20/len(mixed)+1)
	})
	if benchOnce.text == "" {
		b.Fatal("no testdata samples")
	}
	return benchOnce.text
}

func BenchmarkEstimator(b *testing.B) {
	benchCounter(b, NewEstimator(), benchText(b))
}

// BenchmarkEstimatorKind measures each kind of testdata text on its own.
func BenchmarkEstimatorKind(b *testing.B) {
	for _, kind := range []string{"code", "prose", "json", "cjk"} {
		text := kindText(b, kind)
		b.Run(kind, func(b *testing.B) { benchCounter(b, NewEstimator(), text) })
	}
}

// kindText returns about 1 MB of the testdata samples of one kind.
func kindText(b *testing.B, kind string) string {
	files, _ := filepath.Glob(filepath.Join("testdata", kind, "*"))
	var text string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		text += string(data)
	}
	if text == "" {
		b.Fatalf("no testdata samples of kind %s", kind)
	}
	return strings.Repeat(text, 1<<20/len(text)+1)
}

type counter interface{ Count(string) int }

// benchCounter counts text per iteration, and reports MB per CPU second
// besides the usual MB per wall-clock second.
func benchCounter(b *testing.B, c counter, text string) {
	b.SetBytes(int64(len(text)))
	start := cpuTime(b)
	for b.Loop() {
		c.Count(text)
	}
	if cpu := cpuTime(b) - start; cpu > 0 {
		b.ReportMetric(float64(len(text))*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

func BenchmarkExactO200k(b *testing.B) {
	text := benchText(b)[:256<<10]
	e, err := NewExact("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	e.Count("warm up")
	benchCounter(b, e, text)
}

// BenchmarkYardstick is not ctxkit code: it runs the simplest possible scan
// (count where the byte class changes) over the mixed text, so the
// estimator's MB/s can be read against what this machine does at all.
func BenchmarkYardstick(b *testing.B) {
	benchCounter(b, counterFunc(classChanges), benchText(b))
}

func classChanges(s string) int {
	n := 0
	prev := uint8(255)
	for i := 0; i < len(s); i++ {
		if c := classOf[s[i]]; c != prev {
			n++
			prev = c
		}
	}
	return n
}

type counterFunc func(string) int

func (f counterFunc) Count(s string) int { return f(s) }
