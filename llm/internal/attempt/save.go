package attempt

import (
	"fmt"
	"os"
)

// SaveRequest writes body, a request the provider rejected, to a new file
// bad-request-*.json in dir (created if need be) and returns its path. The
// file is private to the user: requests carry code and conversation.
// Request bodies never carry the API key, which travels in a header.
func SaveRequest(dir string, body []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("saving the rejected request: %w", err)
	}
	f, err := os.CreateTemp(dir, "bad-request-*.json")
	if err != nil {
		return "", fmt.Errorf("saving the rejected request: %w", err)
	}
	_, err = f.Write(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("saving the rejected request: %w", err)
	}
	return f.Name(), nil
}
