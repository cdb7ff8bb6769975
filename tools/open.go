package tools

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ctxkit/ctxkit/internal/filekind"
)

// openRegular opens rel for reading if it is a regular file with a single
// link. The open does not block (a FIFO has no writer to wait for), and
// the checks are made on the opened file, so nothing can swap it between
// the check and the read. A file with several hard links may be one that
// also lives outside the workspace — os.Root cannot tell — so its content
// is not given out.
func (s *Set) openRegular(rel string) (*os.File, fs.FileInfo, error) {
	p := show(rel)
	f, err := s.root.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, pathError(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, pathError(p, err)
	}
	if err := regularOnly(p, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regularOnly refuses what is not a regular file with a single link.
func regularOnly(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", p)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s); the tools read only regular files", p, filekind.Of(fi.Mode()))
	case linkCount(fi) > 1:
		return fmt.Errorf("%s has %d hard links, so it may be a file outside the workspace; the tools do not read hard-linked files (copy it if you need it)", p, linkCount(fi))
	}
	return nil
}

// readRegular reads the whole of rel under openRegular's rules.
func (s *Set) readRegular(rel string) ([]byte, error) {
	f, _, err := s.openRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
