package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotInstalled: no initdb/pg_ctl found, or running as root with no
// postgres user to run them as.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (apt-get install postgresql)")

// Options tune a cluster.
type Options struct {
	// Durable keeps fsync and synchronous commit on (the server's
	// defaults). Tests leave it off: the cluster is thrown away.
	Durable bool
	// MaxConnections is the server's max_connections (default 200).
	MaxConnections int
}

// Cluster is a running throwaway PostgreSQL cluster.
type Cluster struct {
	bin  string // directory holding initdb, pg_ctl
	dir  string // root of everything: socket, data/, log
	port int
	cred *syscall.Credential // who runs the server; nil: this process's user

	mu sync.Mutex // serialises Start/Stop
}

// FindBin returns the directory of initdb and pg_ctl: the newest
// /usr/lib/postgresql/N/bin (Debian), else the one on PATH.
func FindBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start creates a cluster in a new temporary directory and starts it.
// Close stops it and removes the directory.
func Start(ctx context.Context, opt Options) (*Cluster, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, port: 5432}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("%w: running as root and there is no postgres user to run the server as", ErrNotInstalled)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// The socket path must stay under the kernel's 107 bytes.
	tmp := os.TempDir()
	if len(tmp) > 60 {
		tmp = "/tmp"
	}
	c.dir, err = os.MkdirTemp(tmp, "ctxkit-pg-")
	if err != nil {
		return nil, fmt.Errorf("creating the cluster's directory: %w", err)
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(c.dir)
			return nil, fmt.Errorf("handing %s to the postgres user: %w", c.dir, err)
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	maxConn := opt.MaxConnections
	if maxConn == 0 {
		maxConn = 200
	}
	conf := fmt.Sprintf("\n# pgtest\nlisten_addresses = ''\nunix_socket_directories = '%s'\nport = %d\nmax_connections = %d\n",
		c.dir, c.port, maxConn)
	if !opt.Durable {
		conf += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	}
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(c.dir)
		return nil, fmt.Errorf("configuring the cluster: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) log() string  { return filepath.Join(c.dir, "server.log") }

// run runs one of the cluster's programs as the cluster's user.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "HOME="+c.dir, "USER=postgres", "LOGNAME=postgres")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if logb, lerr := os.ReadFile(c.log()); lerr == nil {
			msg += "\nserver log:\n" + tail(string(logb), 20)
		}
		return fmt.Errorf("%s %s: %w\n%s", prog, strings.Join(args, " "), err, msg)
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Start starts the (stopped) server and waits until it accepts
// connections.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", c.log())
}

// Stop stops the server, disconnecting its clients (pg_ctl -m fast).
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", c.data())
}

// Outage stops the server for t (pg_ctl -m fast) and returns the function
// that starts it again; if t ends first, cleanup starts it, so the
// package's other tests still find it running.
func (c *Cluster) Outage(t testing.TB) (restart func()) {
	t.Helper()
	ctx := context.Background()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	start := func() error {
		var err error
		once.Do(func() { err = c.Start(ctx) })
		return err
	}
	t.Cleanup(func() { start() })
	return func() {
		t.Helper()
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
}

// Crash stops the server the way a power cut would (pg_ctl -m
// immediate: no checkpoint, crash recovery at the next Start).
func (c *Cluster) Crash(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", "immediate", "-D", c.data())
}

// Close stops the server if it runs and removes its directory.
func (c *Cluster) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.mu.Lock()
	err := c.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", "immediate", "-D", c.data())
	c.mu.Unlock()
	if err != nil && c.running(ctx) {
		return err // still running: keep its files for a look
	}
	return os.RemoveAll(c.dir)
}

func (c *Cluster) running(ctx context.Context) bool {
	return c.run(ctx, "pg_ctl", "status", "-D", c.data()) == nil
}

// Dir is the cluster's directory (the Unix socket is in it).
func (c *Cluster) Dir() string { return c.dir }

// DSN is the connection URL of database db (superuser postgres, Unix
// socket, no password).
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", url.PathEscape(db), url.QueryEscape(c.dir), c.port)
}

// CreateDB creates an empty database and returns its DSN.
func (c *Cluster) CreateDB(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connecting to the test cluster: %w", err)
	}
	defer conn.Close(ctx)
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	// FILE_COPY (PostgreSQL 15+) copies the template's files instead of
	// logging every block: much faster with fsync off.
	if _, err := conn.Exec(ctx, q+" STRATEGY FILE_COPY"); err != nil {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("creating database %s: %w", name, err)
		}
	}
	return c.DSN(name), nil
}

// Shared is one cluster for a test package, started by Main.
type Shared struct {
	Options Options // set before Main

	c    *Cluster
	skip string
	n    atomic.Int64
}

// Main starts the cluster (unless PostgreSQL is absent: then the tests
// that need it skip), runs the tests, then removes the cluster. Pass its
// result to os.Exit.
func (s *Shared) Main(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := Start(ctx, s.Options)
	cancel()
	switch {
	case errors.Is(err, ErrNotInstalled):
		s.skip = "skipping: " + err.Error()
	case err != nil:
		fmt.Fprintf(os.Stderr, "pgtest: starting a throwaway PostgreSQL: %v\n", err)
		return 1
	}
	s.c = c
	code := m.Run()
	if c != nil {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: removing the throwaway PostgreSQL in %s: %v\n", c.dir, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Cluster returns the package's cluster, or skips t when PostgreSQL is
// absent.
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	if s.c == nil {
		if s.skip == "" {
			t.Fatal("pgtest: Shared.Main did not run (call it from TestMain)")
		}
		t.Skip(s.skip)
	}
	return s.c
}

// DB creates a fresh empty database for t and returns its DSN, or skips
// t when PostgreSQL is absent.
func (s *Shared) DB(t testing.TB) string {
	t.Helper()
	c := s.Cluster(t)
	dsn, err := c.CreateDB(context.Background(), fmt.Sprintf("t%d", s.n.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// DurableDB starts a cluster of its own for t with fsync and synchronous
// commit on, as a production server runs (for benchmarks), and returns a
// fresh database on it; the cluster goes at t's cleanup. It skips t when
// PostgreSQL is absent.
func (s *Shared) DurableDB(t testing.TB) string {
	t.Helper()
	s.Cluster(t)
	ctx := context.Background()
	c, err := Start(ctx, Options{Durable: true, MaxConnections: s.Options.MaxConnections})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dsn, err := c.CreateDB(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
