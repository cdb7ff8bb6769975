package importer

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBigSession imports a generated Claude Code log of CTXKIT_BIG_MB
// megabytes (default 500) and reports the peak heap: the log is streamed
// line by line, so the peak follows the conversation kept, not the file.
// It writes that much to a temporary directory and takes a while, so it
// runs only with CTXKIT_BIG=1:
//
//	CTXKIT_BIG=1 go test -run TestBigSession -v ./importer/
func TestBigSession(t *testing.T) {
	if os.Getenv("CTXKIT_BIG") != "1" || testing.Short() {
		t.Skip("set CTXKIT_BIG=1 to import a generated 500 MB session log")
	}
	mb := 500
	if v, err := strconv.Atoi(os.Getenv("CTXKIT_BIG_MB")); err == nil && v > 0 {
		mb = v
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	size, rounds := writeBigSession(t, path, int64(mb)<<20)
	t.Logf("generated %s: %.0f MB, %d rounds", path, float64(size)/(1<<20), rounds)

	runtime.GC()
	base := heapBytes()
	peak := watchHeap()
	start := time.Now()
	s, err := Load(context.Background(), path, Options{Strict: true})
	elapsed := time.Since(start)
	top := peak()
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, m := range s.Conv.Messages {
		for _, b := range m.Blocks {
			kept += len(b.PlainText()) + len(b.Signature)
		}
	}
	runtime.KeepAlive(s)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("imported %d messages, %d rounds in %v (%.0f MB/s)", len(s.Conv.Messages), len(s.Conv.Rounds()), elapsed.Round(time.Millisecond), float64(size)/(1<<20)/elapsed.Seconds())
	t.Logf("file %.0f MB; conversation text kept %.0f MB; peak heap during import %.0f MB above a %.0f MB baseline; max RSS %.0f MB",
		float64(size)/(1<<20), float64(kept)/(1<<20), float64(top-base)/(1<<20), float64(base)/(1<<20), float64(ru.Maxrss)/1024)
	if got := count(s.Conv); got.calls != rounds || got.results != rounds {
		t.Errorf("imported %+v, want %d calls and results", got, rounds)
	}
	// Reading the file whole would take its size before parsing began;
	// streaming leaves the conversation kept plus the collector's headroom.
	if grew := top - base; grew > uint64(size) || grew > 3*uint64(kept)+64<<20 {
		t.Errorf("peak heap %d MB for a %d MB file keeping %d MB: the import is not streaming", grew>>20, size>>20, kept>>20)
	}
}

// writeBigSession writes Claude Code records until the file reaches size:
// per round a user request, a response split over three records (thinking,
// text, tool call), a tool result with its toolUseResult copy, a progress
// record, and now and then a file-history snapshot — the mix real logs
// have, where the conversation is about a quarter of the bytes.
func writeBigSession(t *testing.T, path string, size int64) (written int64, rounds int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	const words = "the parser returns an error when the input ends early so we check the length first and report the position "
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			i := rng.IntN(len(words) - 20)
			sb.WriteString(words[i : i+20])
		}
		return sb.String()
	}
	meta := `"cwd":"/home/dev/project","sessionId":"5c0375b4-57a5-4f26-b12d-d022ee4e51b7","version":"2.1.14","gitBranch":"main","userType":"external"`
	usage := `"usage":{"input_tokens":4,"cache_creation_input_tokens":1843,"cache_read_input_tokens":48211,"output_tokens":312,"service_tier":"standard"}`
	uuid := 0
	next := func() string { uuid++; return fmt.Sprintf("%08x-0000-4000-8000-%012x", uuid, uuid) }
	line := func(format string, args ...any) {
		n, _ := fmt.Fprintf(w, format+"\n", args...)
		written += int64(n)
	}
	ts := time.Date(2026, 1, 21, 20, 0, 0, 0, time.UTC)
	for written < size {
		rounds++
		ts = ts.Add(7 * time.Second)
		at := ts.Format(time.RFC3339Nano)
		id := fmt.Sprintf("msg_%06d", rounds)
		call := fmt.Sprintf("toolu_%06d", rounds)
		line(`{"parentUuid":null,"isSidechain":false,%s,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":%q}`, meta, text(200), next(), at)
		line(`{"parentUuid":null,"isSidechain":false,%s,"type":"assistant","message":{"model":"claude-sonnet-4-5","id":%q,"type":"message","role":"assistant","content":[{"type":"thinking","thinking":%q,"signature":"EqQBCkgIARABGAIiQLx"}],"stop_reason":null,%s},"requestId":"req_%d","uuid":%q,"timestamp":%q}`, meta, id, text(600), usage, rounds, next(), at)
		line(`{"parentUuid":null,"isSidechain":false,%s,"type":"assistant","message":{"model":"claude-sonnet-4-5","id":%q,"type":"message","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":null,%s},"requestId":"req_%d","uuid":%q,"timestamp":%q}`, meta, id, text(300), usage, rounds, next(), at)
		line(`{"parentUuid":null,"isSidechain":false,%s,"type":"assistant","message":{"model":"claude-sonnet-4-5","id":%q,"type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"go test ./parser/ -run TestParse -v","description":"Run the parser tests"}}],"stop_reason":"tool_use",%s},"requestId":"req_%d","uuid":%q,"timestamp":%q}`, meta, id, call, usage, rounds, next(), at)
		out := text(1000 + rng.IntN(6000))
		for k := 1; k <= 2; k++ {
			line(`{"type":"progress","isSidechain":false,%s,"data":{"type":"bash_progress","output":%q,"fullOutput":%q,"elapsedTimeSeconds":%d},"uuid":%q,"timestamp":%q}`, meta, out[:min(len(out), 800*k)], out[:min(len(out), 1600*k)], k, next(), at)
		}
		line(`{"parentUuid":null,"isSidechain":false,%s,"type":"user","message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%q,"is_error":false}]},"uuid":%q,"timestamp":%q,"toolUseResult":{"stdout":%q,"stderr":"","interrupted":false,"isImage":false}}`, meta, call, out, next(), at, out)
		if rounds%10 == 0 {
			line(`{"type":"file-history-snapshot","messageId":%q,"snapshot":{"trackedFileBackups":{"parser/parser.go":{"backupFileName":"b@v2","version":2,"backupTime":%q,"content":%q}}},"isSnapshotUpdate":false}`, next(), at, text(8000))
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return written, rounds
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// watchHeap samples the live heap until the returned function is called,
// which returns the highest value seen.
func watchHeap() func() uint64 {
	var (
		mu   sync.Mutex
		top  uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			h := heapBytes()
			mu.Lock()
			top = max(top, h)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		h := heapBytes()
		mu.Lock()
		defer mu.Unlock()
		return max(top, h)
	}
}
