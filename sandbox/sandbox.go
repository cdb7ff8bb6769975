package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is how far the agent's commands are confined.
type Mode string

// The modes, from the most confined.
const (
	// ReadOnly: commands read anything but the hidden paths and write
	// nowhere (but /dev/null and the like).
	ReadOnly Mode = "read-only"
	// WorkspaceWrite: commands also write in the writable folders (the
	// workspace and the session's temporary folder).
	WorkspaceWrite Mode = "workspace-write"
	// Off: commands run with all the user's rights.
	Off Mode = "off"
)

// Modes lists the modes' names.
var Modes = []string{string(WorkspaceWrite), string(ReadOnly), string(Off)}

// Sentinel errors.
var (
	// ErrMode: a mode name that is not one of Modes.
	ErrMode = errors.New("unknown sandbox mode")
	// ErrUnsupported: the kernel cannot confine commands (no Landlock).
	ErrUnsupported = errors.New("this kernel has no Landlock, so commands cannot be confined")
)

// ParseMode reads a mode's name; "" is WorkspaceWrite.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return WorkspaceWrite, nil
	}
	if !slices.Contains(Modes, s) {
		return "", fmt.Errorf("%w %q (known: %s)", ErrMode, s, strings.Join(Modes, ", "))
	}
	return Mode(s), nil
}

// Policy is what a confined command may do. It is plain data: the
// helper process gets it as JSON and works out the rules itself.
type Policy struct {
	Mode Mode `json:"mode"`
	// Writable are the folders commands may write in, with everything
	// beneath them (WorkspaceWrite only).
	Writable []string `json:"writable,omitempty"`
	// Hidden are files and folders commands may not read (their names
	// can still be listed), unless they lie in a writable folder.
	Hidden []string `json:"hidden,omitempty"`
	// Network lets commands connect and bind TCP ports; without it they
	// cannot, where the kernel's Landlock ABI is 4 or newer.
	Network bool `json:"network,omitempty"`
}

// Access is what a Rule lets a command do beneath its path.
type Access int

// The accesses, each including the ones before it.
const (
	// List: list folders (not read files).
	List Access = iota + 1
	// Read: read files, list folders and run programs.
	Read
	// Write: also create, change, rename and remove files and folders.
	Write
)

func (a Access) String() string {
	switch a {
	case List:
		return "list"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// Rule lets a command do Access on Path and everything beneath it. Dir
// says Path is a folder (Landlock gives files fewer rights than folders).
type Rule struct {
	Path   string
	Access Access
	Dir    bool
}

// RuleSet is the rules of a Policy, as the kernel gets them; a command may
// do what one of them allows, and nothing else (Landlock's rules add up).
type RuleSet struct {
	Rules []Rule
	// Exposed are the hidden paths that stay readable because a writable
	// folder holds them.
	Exposed []string
}

// Allows reports whether the rules let a command do a on path (absolute,
// symbolic links resolved), as the kernel decides it.
func (rs RuleSet) Allows(path string, a Access) bool {
	for _, r := range rs.Rules {
		if r.Access >= a && within(path, r.Path) {
			return true
		}
	}
	return false
}

// devices are the files every command may write: the bit bucket and its
// kin, and the terminal.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// Rules works out the rules of p on this machine's file tree: reading
// everywhere but the hidden paths, listing the folders that lead to them,
// writing in the writable folders and the devices. It reads the folders
// that hold hidden paths, so it runs where the rules are applied, just
// before the command starts: the rules are those of the tree as it is
// then.
func Rules(p Policy) (RuleSet, error) {
	var rs RuleSet
	var writable []string
	if p.Mode == WorkspaceWrite {
		for _, w := range p.Writable {
			r, err := resolve(w)
			if err != nil {
				return RuleSet{}, fmt.Errorf("sandbox: writable folder %s: %w", w, err)
			}
			writable = append(writable, r)
		}
	}
	var hidden []string
	for _, h := range p.Hidden {
		r, err := resolve(h)
		if errors.Is(err, os.ErrNotExist) {
			continue // nothing there to hide
		}
		if err != nil {
			return RuleSet{}, fmt.Errorf("sandbox: hidden path %s: %w", h, err)
		}
		if slices.ContainsFunc(writable, func(w string) bool { return within(r, w) }) {
			rs.Exposed = append(rs.Exposed, h)
			continue
		}
		hidden = append(hidden, r)
	}
	rs.cover("/", hidden)
	for _, w := range writable {
		rs.Rules = append(rs.Rules, Rule{Path: w, Access: Write, Dir: true})
	}
	for _, d := range devices {
		if _, err := os.Stat(d); err == nil {
			rs.Rules = append(rs.Rules, Rule{Path: d, Access: Write})
		}
	}
	return rs, nil
}

// cover adds the rules that let commands read everything beneath dir but
// the hidden paths: dir itself when none is beneath it, else a List rule
// on dir and the same for each of its entries.
func (rs *RuleSet) cover(dir string, hidden []string) {
	if !slices.ContainsFunc(hidden, func(h string) bool { return within(h, dir) }) {
		fi, err := os.Stat(dir)
		if err != nil {
			return
		}
		rs.Rules = append(rs.Rules, Rule{Path: dir, Access: Read, Dir: fi.IsDir()})
		return
	}
	if slices.Contains(hidden, dir) {
		return
	}
	rs.Rules = append(rs.Rules, Rule{Path: dir, Access: List, Dir: true})
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // unreadable: nothing beneath it is granted
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			// A rule on a link is a rule on what it leads to: grant it only
			// when that is neither hidden nor on the way to a hidden path
			// (which the walk reaches by its own name).
			t, err := filepath.EvalSymlinks(p)
			if err != nil || slices.ContainsFunc(hidden, func(h string) bool { return within(t, h) || within(h, t) }) {
				continue
			}
		}
		rs.cover(p, hidden)
	}
}

// resolve makes p absolute and resolves its symbolic links, as the kernel
// sees it.
func resolve(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}
