package toolresult

import (
	"bytes"
	"os"
	"strings"
)

// txtar is the archive format of golang.org/x/tools/txtar (a comment, then
// files introduced by "-- name --" lines), parsed here because that module
// is not in the build's module graph.
type txtar struct{}

type archive struct {
	Comment []byte
	Files   []archiveFile
}

type archiveFile struct {
	Name string
	Data []byte
}

func (txtar) ParseFile(name string) (*archive, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return txtar{}.Parse(data), nil
}

func (txtar) Parse(data []byte) *archive {
	a := new(archive)
	var cur *[]byte = &a.Comment
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		s := strings.TrimRight(string(line), "\r\n")
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) >= 6 {
			a.Files = append(a.Files, archiveFile{Name: strings.TrimSpace(s[3 : len(s)-3])})
			cur = &a.Files[len(a.Files)-1].Data
			continue
		}
		*cur = append(*cur, line...)
	}
	return a
}

func (txtar) Format(a *archive) []byte {
	var b bytes.Buffer
	b.Write(a.Comment)
	for _, f := range a.Files {
		b.WriteString("-- " + f.Name + " --\n")
		b.Write(f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
