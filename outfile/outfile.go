package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/internal/filekind"
)

// Errors Check and Write return; test them with errors.Is.
var (
	// ErrInput: the output path names one of the inputs.
	ErrInput = errors.New("refusing to overwrite an input")
	// ErrNotRegular: the output path names a device, a FIFO or a socket.
	ErrNotRegular = errors.New("not a regular file")
	// ErrSymlink: the output path is a symbolic link.
	ErrSymlink = errors.New("a symbolic link")
	// ErrDir: the output path is a directory.
	ErrDir = errors.New("a directory")
)

// Options says what an output must not overwrite.
type Options struct {
	// Inputs are the files the command reads; the output may not be any
	// of them. Inputs that do not exist are ignored.
	Inputs []string
	// Force writes in place onto a device, a FIFO, a socket or through a
	// symbolic link instead of refusing. It never allows overwriting an
	// input.
	Force bool
	// Flag names the option the path came from in messages ("-o",
	// "--html"); empty means none.
	Flag string
}

func (o Options) name(path string) string {
	if o.Flag == "" {
		return path
	}
	return o.Flag + " " + path
}

// Check reports whether path may be written as an output: nil, or an
// error saying why not in the user's terms.
func Check(path string, o Options) error {
	_, err := check(path, o)
	return err
}

// target is what Check found at the output path.
type target struct {
	exists  bool
	inPlace bool        // write through open(2), not by rename
	mode    fs.FileMode // permission bits of the file replaced
}

func check(path string, o Options) (target, error) {
	name := o.name(path)
	if path == "" {
		return target{}, errors.New("the output path is empty")
	}
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return target{}, Folder(path, o)
	}
	if err != nil {
		return target{}, fmt.Errorf("%s: %w", name, cause(err))
	}
	if fi, err := os.Stat(path); err == nil {
		for _, in := range o.Inputs {
			if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
				what := "it is the input " + in
				if filepath.Clean(in) == filepath.Clean(path) {
					what = "it is the input"
				}
				return target{}, fmt.Errorf("%s: %w (%s); write the output somewhere else", name, ErrInput, what)
			}
		}
	}
	t := target{exists: true, mode: lfi.Mode().Perm()}
	switch {
	case lfi.IsDir():
		return t, fmt.Errorf("%s is %w; give a file name", name, ErrDir)
	case lfi.Mode()&fs.ModeSymlink != 0:
		if !o.Force {
			return t, fmt.Errorf("%s is %w; ctxkit does not replace links (give the file it points to, or --force to write through it)", name, ErrSymlink)
		}
		fi, err := os.Stat(path)
		if err == nil && fi.IsDir() {
			return t, fmt.Errorf("%s leads to %w; give a file name", name, ErrDir)
		}
		t.inPlace = true
	case !lfi.Mode().IsRegular():
		if !o.Force {
			return t, fmt.Errorf("%s is %w (%s); ctxkit writes it only in place, with --force", name, ErrNotRegular, filekind.Of(lfi.Mode()))
		}
		t.inPlace = true
	default:
		// Replaced by a rename: the folder must take a new file.
		if err := Folder(path, o); err != nil {
			return t, err
		}
	}
	return t, nil
}

// Folder reports whether a new file can be created beside path: its
// folder exists, is a folder, and takes a new file (tried with a temporary
// file, removed at once), so that a command fails before its work rather
// than when it writes the result.
func Folder(path string, o Options) error {
	name := o.name(path)
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: the folder %s does not exist", name, dir)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a folder", name, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe-*")
	if err != nil {
		why := cause(err)
		if errors.Is(why, fs.ErrNotExist) {
			why = errors.New("it takes no new files") // /proc, /sys
		}
		return fmt.Errorf("%s: cannot create a file in the folder %s: %w", name, dir, why)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// Write writes data to path after Check's checks: by an atomic rename onto
// a new path or a regular file, or in place onto a device, a FIFO or
// through a link when Options.Force allows it.
func Write(path string, data []byte, o Options) error {
	t, err := check(path, o)
	if err != nil {
		return err
	}
	name := o.name(path)
	if t.inPlace {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o666)
		if err != nil {
			return fmt.Errorf("%s: %w", name, cause(err))
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return fmt.Errorf("writing %s: %w", name, cause(err))
		}
		return nil
	}
	dir := filepath.Dir(path)
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	// 0666 less the umask, as the kernel applies it.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fmt.Errorf("writing %s: cannot create a file in %s: %w", name, dir, cause(err))
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	if t.exists {
		if err := f.Chmod(t.mode); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", name, cause(err))
		}
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("writing %s: %w", name, cause(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", name, cause(err))
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// cause strips the path an *fs.PathError carries, so that messages name
// the user's path and not a temporary one.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
