package transcript

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultDir is the folder session folders go in by default:
// $CTXKIT_HOME/sessions when CTXKIT_HOME is set, else ~/.ctxkit/sessions.
func DefaultDir() (string, error) {
	if h := os.Getenv("CTXKIT_HOME"); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("transcript: no default session folder: %w", err)
	}
	return filepath.Join(home, ".ctxkit", "sessions"), nil
}

// NewSessionID returns a new session id: the UTC time to the microsecond
// and 8 random hex digits ("20260105-150405-123456-9f3a1c2e"), so that ids
// sort by creation time and never collide.
func NewSessionID() string {
	return sessionID(time.Now())
}

func sessionID(t time.Time) string {
	var r [4]byte
	rand.Read(r[:]) // never fails (crypto/rand.Read panics rather than return an error)
	ts := strings.Replace(t.UTC().Format("20060102-150405.000000"), ".", "-", 1)
	return ts + "-" + hex.EncodeToString(r[:])
}
