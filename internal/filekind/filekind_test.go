package filekind

import (
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		mode fs.FileMode
		want string
	}{
		{fs.ModeNamedPipe | 0o644, "a FIFO"},
		{fs.ModeDevice | fs.ModeCharDevice, "a character device"},
		{fs.ModeDevice, "a device"},
		{fs.ModeSocket, "a socket"},
		{fs.ModeSymlink | 0o777, "a symbolic link"},
		{fs.ModeIrregular, "?---------"},
	} {
		if got := Of(tc.mode); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.mode, got, tc.want)
		}
	}
}
