package transcript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file in the session folder. The lock is a flock on
// it, not its existence: the kernel drops it when the holder exits, however
// it exits, so a crashed agent never leaves a stale lock behind.
const lockName = "lock"

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transcript: lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is open in another process or store", ErrLocked, dir)
		}
		return nil, fmt.Errorf("transcript: lock %s: %w", dir, err)
	}
	return f, nil
}
