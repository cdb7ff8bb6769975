package transcript_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/transcript"
)

// The test binary doubles as the child processes of the kill and lock
// tests: started with childEnv set, it runs that role instead of the tests.
const (
	childEnv    = "CTXKIT_TRANSCRIPT_CHILD"     // "writer" or "holder"
	childDirEnv = "CTXKIT_TRANSCRIPT_CHILD_DIR" // the session folder
	killsEnv    = "CTXKIT_KILLS"                // number of kills (default 300)
	seedEnv     = "CTXKIT_KILL_SEED"            // to replay a run
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "writer":
		os.Exit(runWriter(os.Getenv(childDirEnv)))
	case "holder":
		os.Exit(runHolder(os.Getenv(childDirEnv)))
	}
	os.Exit(m.Run())
}

// killText is message k's content: mostly small, every 16th large enough
// (64–192 KiB) that a kill sometimes lands inside its write, every 3rd with
// a byte that is not UTF-8.
func killText(k int) string {
	size := 100 + (k*7919)%4000
	if k%16 == 5 {
		size = 64<<10 + (k*104729)%(128<<10)
	}
	unit := "message " + strconv.Itoa(k) + " |"
	if k%3 == 0 {
		unit = "message " + strconv.Itoa(k) + " \xff|"
	}
	return strings.Repeat(unit, size/len(unit)+1)[:size]
}

func killCleared(k int) string { return "[cleared message " + strconv.Itoa(k) + "]" }

// runWriter resumes (or starts) the session and appends messages forever,
// printing "m K" once message K is acknowledged (Append returned) and
// "e K" once the edit clearing message K is. Every 4th message clears the
// one three before it.
func runWriter(dir string) int {
	ctx := context.Background()
	s, err := transcript.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = transcript.Create(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 2
	}
	c := s.Conversation()
	out := bufio.NewWriterSize(os.Stdout, 64)
	ack := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	start := time.Now()
	for k := len(c.Messages); time.Since(start) < 20*time.Second; k++ {
		role := conv.RoleUser
		if k%2 == 1 {
			role = conv.RoleAssistant
		}
		c.Append(conv.Message{Role: role, Blocks: []conv.Block{{Type: conv.TypeText, Text: killText(k), Meta: conv.DefaultMeta(conv.TypeText, conv.SourceTool)}}})
		if err := s.Append(ctx, c.Messages[k]); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			return 3
		}
		ack("m %d", k)
		if k%4 == 3 {
			b := c.Messages[k-3].Blocks[0].Clone()
			b.SetText(killCleared(k-3), conv.RungPlaceholder)
			e := conv.Edit{Kind: conv.EditRung, Reason: "kill-test", Blocks: []conv.Block{b}}
			if err := s.Keep(ctx, e, c); err != nil {
				fmt.Fprintln(os.Stderr, "writer:", err)
				return 3
			}
			if err := c.Apply(e); err != nil {
				fmt.Fprintln(os.Stderr, "writer:", err)
				return 3
			}
			ack("e %d", k-3)
		}
	}
	return 0
}

// runHolder opens the session, says so, and waits to be killed.
func runHolder(dir string) int {
	s, err := transcript.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	defer s.Close()
	fmt.Println("locked")
	time.Sleep(30 * time.Second)
	return 0
}

func child(t *testing.T, role, dir string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, childDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s child stderr:\n%s", role, stderr.String())
		}
	})
	return cmd, out
}

// TestKill kills a writer with SIGKILL at random points, many times, and
// checks after every kill that the transcript opens and holds every record
// that was acknowledged, and nothing garbled.
func TestKill(t *testing.T) {
	kills := 300
	if raceEnabled { // instrumented children are several times slower
		kills = 50
	}
	if testing.Short() {
		kills = 40
	}
	if v := os.Getenv(killsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", killsEnv, v, err)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("%d kills, seed %d (%s=%d to replay)", kills, seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	var (
		start                      = time.Now()
		dir                        string
		ackedMsg, ackedEdit        map[int]bool
		torn, records, startupKill int
		unacked                    int // records on disk whose acknowledgement the kill cut off
		inWriter, inCheck          time.Duration
	)
	for i := range kills {
		if i%10 == 0 { // a fresh session now and then keeps each Open quick
			dir = filepath.Join(t.TempDir(), "sess")
			ackedMsg, ackedEdit = map[int]bool{}, map[int]bool{}
		}
		t0 := time.Now()
		cmd, out := child(t, "writer", dir)
		acks := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				acks <- sc.Text()
			}
			close(acks)
		}()
		record := func(line string) {
			var k int
			switch {
			case strings.HasPrefix(line, "m "):
				k, _ = strconv.Atoi(line[2:])
				ackedMsg[k] = true
			case strings.HasPrefix(line, "e "):
				k, _ = strconv.Atoi(line[2:])
				ackedEdit[k] = true
			default:
				t.Fatalf("writer said %q", line)
			}
		}
		// Kill at a random time (often while it opens or cuts a torn
		// record), or right after a random number of acknowledgements.
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
			startupKill++
		} else {
			want := 1 + rng.IntN(8)
			timeout := time.After(10 * time.Second)
		wait:
			for n := 0; n < want; n++ {
				select {
				case line, ok := <-acks:
					if !ok {
						break wait // the writer died on its own: Wait reports it below
					}
					record(line)
				case <-timeout:
					t.Fatal("writer acknowledged nothing for 10s")
				}
			}
			// Right after an acknowledgement the writer is encoding and
			// writing the next record: aim there half the time.
			if rng.IntN(2) == 0 {
				time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
			} else {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			}
		}
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		err := cmd.Wait()
		for line := range acks { // what it acknowledged before dying
			record(line)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: writer ended with %v, not by SIGKILL", i, err)
		}
		if _, err := os.Stat(filepath.Join(dir, transcript.FileName)); errors.Is(err, fs.ErrNotExist) && len(ackedMsg) == 0 {
			continue // killed before it created the session
		}
		t1 := time.Now()
		inWriter += t1.Sub(t0)
		n, w := checkKilled(t, i, dir, ackedMsg, ackedEdit)
		inCheck += time.Since(t1)
		records += n
		torn += w
		last := -1
		for k := range ackedMsg {
			last = max(last, k)
		}
		unacked += n - 1 - last
		for k := last + 1; k < n; k++ {
			ackedMsg[k] = true // it is on disk now: the next writer resumes after it
		}
	}
	t.Logf("%d kills in %v (writers %v, checks %v; %d kills right after start); %d torn records found and ignored; %d messages on disk but not yet acknowledged; %d messages checked in all",
		kills, time.Since(start).Round(time.Millisecond), inWriter.Round(time.Millisecond), inCheck.Round(time.Millisecond), startupKill, torn, unacked, records)
}

// checkKilled opens the transcript a killed writer left and checks it
// against what the writer acknowledged.
func checkKilled(t *testing.T, kill int, dir string, ackedMsg, ackedEdit map[int]bool) (msgs, torn int) {
	t.Helper()
	s, err := transcript.OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("kill %d: transcript does not open: %v", kill, err)
	}
	defer s.Close()
	c := s.Conversation()
	for k := range ackedMsg {
		if k >= len(c.Messages) {
			t.Fatalf("kill %d: message %d was acknowledged but the transcript holds %d", kill, k, len(c.Messages))
		}
	}
	for k, m := range c.Messages {
		if len(m.Blocks) != 1 || m.Blocks[0].ID != "b"+strconv.Itoa(k+1) {
			t.Fatalf("kill %d: message %d has blocks %+v", kill, k, m.Blocks)
		}
		b := m.Blocks[0]
		switch {
		case b.Meta.Rung == conv.RungFull && b.Text == killText(k) && !ackedEdit[k]:
		case b.Meta.Rung == conv.RungPlaceholder && b.Text == killCleared(k):
		default:
			t.Fatalf("kill %d: message %d is garbled or lost its acknowledged edit: rung %d, %d bytes %.40q", kill, k, b.Meta.Rung, len(b.Text), b.Text)
		}
		// Recall the originals of the newest messages (all of them every
		// time would make the test quadratic).
		if k >= len(c.Messages)-8 || b.Meta.Rung != conv.RungFull && k >= len(c.Messages)-32 {
			orig, err := s.Recall(b.ID)
			if err != nil || orig.Text != killText(k) || orig.Meta.Rung != conv.RungFull {
				t.Fatalf("kill %d: Recall(%s) = rung %d %.40q, %v", kill, b.ID, orig.Meta.Rung, orig.Text, err)
			}
		}
	}
	if c.Seq != len(c.Messages) {
		t.Fatalf("kill %d: Seq %d with %d messages", kill, c.Seq, len(c.Messages))
	}
	if vs := conv.Check(c); len(vs) > 0 && len(c.Messages) > 0 {
		for _, v := range vs {
			if v.Rule != conv.RuleEmptyMessage { // only roles and ids matter here
				t.Fatalf("kill %d: %v", kill, v)
			}
		}
	}
	return len(c.Messages), len(s.Warnings())
}

// TestLockAcrossProcesses: a second process gets ErrLocked while the first
// holds the session, and a holder killed with SIGKILL leaves no stale lock.
func TestLockAcrossProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sess")
	s, err := transcript.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	cmd, out := child(t, "holder", dir)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	if s, err := transcript.Open(dir); !errors.Is(err, transcript.ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open while another process holds the session: %v, want ErrLocked", err)
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	s, err = transcript.Open(dir)
	if err != nil {
		t.Fatalf("Open after the holder was killed: %v", err)
	}
	s.Close()
}
