package filekind

import "io/fs"

// Of names the type of a file with mode m: "a FIFO", "a character
// device", "a device", "a socket", "a symbolic link", or what
// fs.FileMode's String says of any other type.
func Of(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}
