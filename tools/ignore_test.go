package tools

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestIgnorer(t *testing.T) {
	fsys := fstest.MapFS{
		".gitignore": {Data: []byte(`# build output
/build
*.log
!keep.log
node_modules/
docs/**/*.tmp
**/cache
\#literal
trailing-space   
a[0-9].txt
`)},
		".git/info/exclude":   {Data: []byte("secret.env\n")},
		"sub/.gitignore":      {Data: []byte("local.txt\n/anchored.txt\n!../never\n*.gen.go\n")},
		"sub/deep/.gitignore": {Data: []byte("!x.gen.go\n")},
	}
	ig := newIgnorer(fsys)
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{".git", true, true},
		{"sub/.git", true, true},
		{".hg", true, true},
		{"build", true, true},
		{"build", false, true},
		{"sub/build", true, false}, // anchored to the root
		{"x.log", false, true},
		{"sub/deep/y.log", false, true},
		{"keep.log", false, false},
		{"sub/keep.log", false, false},
		{"node_modules", true, true},
		{"node_modules", false, false}, // dir-only pattern
		{"sub/node_modules", true, true},
		{"docs/a.tmp", false, true},
		{"docs/x/y/z.tmp", false, true},
		{"other/a.tmp", false, false},
		{"cache", true, true},
		{"a/b/cache", true, true},
		{"#literal", false, true},
		{"trailing-space", false, true},
		{"a1.txt", false, true},
		{"ab.txt", false, false},
		{"secret.env", false, true},
		{"sub/local.txt", false, true},
		{"local.txt", false, false}, // sub's rules apply below sub only
		{"sub/anchored.txt", false, true},
		{"sub/x/anchored.txt", false, false},
		{"sub/a.gen.go", false, true},
		{"sub/deep/x.gen.go", false, false}, // re-included deeper
		{"sub/deep/y.gen.go", false, true},
		{"main.go", false, false},
	}
	for _, tt := range tests {
		if got := ig.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestIgnorerExtraPatterns(t *testing.T) {
	ig := newIgnorer(fstest.MapFS{})
	ig.addPatterns("src", []string{"*.pb.go", "vendor/"})
	for path, want := range map[string]bool{
		"src/a.pb.go":      true,
		"src/x/a.pb.go":    true,
		"a.pb.go":          false, // outside the listed folder
		"src/vendor":       true,
		"src/main.go":      false,
		"src/vendor.go":    false,
		"other/vendor.txt": false,
	} {
		if got := ig.ignored(path, path == "src/vendor"); got != want {
			t.Errorf("ignored(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestGlobRegexp(t *testing.T) {
	tests := []struct {
		glob     string
		anchored bool
		yes, no  []string
	}{
		{"*.go", false, []string{"a.go", "x/y/a.go"}, []string{"a.go.txt", "ago"}},
		{"src/**/*.ts", true, []string{"src/a.ts", "src/x/y/a.ts"}, []string{"lib/src/a.ts", "src/a.tsx"}},
		{"**/test", false, []string{"test", "a/test"}, []string{"a/test/b"}},
		{"a/**", true, []string{"a/b", "a/b/c"}, []string{"a", "b/a/c"}},
		{"file?.txt", false, []string{"file1.txt"}, []string{"file10.txt", "file/.txt"}},
		{"[!a-c]x", false, []string{"dx"}, []string{"ax", "bx"}},
		{"[]]x", false, []string{"]x"}, []string{"ax"}},
		{"[abc", false, []string{"[abc"}, []string{"a"}},
		{`\*x`, false, []string{"*x"}, []string{"ax"}},
		{"a.b+c(d)", false, []string{"a.b+c(d)"}, []string{"aXb+c(d)"}},
	}
	for _, tt := range tests {
		re, err := globRegexp(tt.glob, tt.anchored)
		if err != nil {
			t.Errorf("globRegexp(%q): %v", tt.glob, err)
			continue
		}
		for _, p := range tt.yes {
			if !re.MatchString(p) {
				t.Errorf("%q does not match %q (%s)", tt.glob, p, re)
			}
		}
		for _, p := range tt.no {
			if re.MatchString(p) {
				t.Errorf("%q matches %q (%s)", tt.glob, p, re)
			}
		}
	}
}

func TestExpandBraces(t *testing.T) {
	tests := map[string][]string{
		"*.go":                     {"*.go"},
		"*.{ts,tsx}":               {"*.ts", "*.tsx"},
		"{a,b}/{c,d}.go":           {"a/c.go", "a/d.go", "b/c.go", "b/d.go"},
		"x}{":                      {"x}{"},
		"a}{b}c":                   {"a}bc"},
		"{,x}y":                    {"y", "xy"},
		strings.Repeat("{a,b}", 7): nil, // 128 globs
	}
	for in, want := range tests {
		if got := expandBraces(in); !slices.Equal(got, want) {
			t.Errorf("expandBraces(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzGlobRegexp: any glob compiles or fails cleanly, and never panics.
func FuzzGlobRegexp(f *testing.F) {
	for _, s := range []string{"*.go", "a/**/b", "[!x]", "[", `\`, "**", "{a,b}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, glob string) {
		for _, g := range expandBraces(glob) {
			globRegexp(g, true)
			parseIgnoreLine(g)
		}
	})
}
