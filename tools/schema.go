package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// toolSchema is what the provider is told about one tool.
type toolSchema struct {
	desc     string
	schema   json.RawMessage
	required []string
}

// schemaFor returns the description and input schema of tool name. The
// JSON is written out by hand (so that the property order reads well) and
// compacted, so equal options give equal bytes.
func schemaFor(name string, o *Options) toolSchema {
	var desc, js string
	var required []string
	switch name {
	case NameRead:
		desc = fmt.Sprintf(`Reads a text file of the workspace and returns its lines numbered like cat -n (line number, tab, text). Without offset and limit it returns the file from the start, at most %d lines or %d KiB; the result says which lines it shows and how many the file has, so a long file can be read in parts with offset. Lines longer than %d bytes are cut. Binary files are refused.
The tool remembers when you last read or wrote each file: if the file changed since then (another program, a command or the user), the result starts with a note saying so, and what you saw before is stale.
Use it instead of cat, head or tail in Bash. To list a folder use LS; to search use Grep.`, o.ReadMaxLines, o.ReadMaxBytes>>10, o.MaxLineLength)
		js = `{"type":"object","properties":{
"file_path":{"type":"string","description":"The file to read: a path relative to the workspace, or an absolute path inside it."},
"offset":{"type":"integer","minimum":1,"description":"The line number to start at (1 is the first line). Give it only to read a later part of a long file."},
"limit":{"type":"integer","minimum":1,"description":"How many lines to return at most. Give it only to read a part of a long file."}},
"required":["file_path"]}`
		required = []string{"file_path"}
	case NameWrite:
		desc = `Writes a whole file: creates it (with any missing folders) or replaces all of its content. The write is atomic, so the file is never left half-written, and the result shows a diff of the change.
Replacing an existing file requires that you have read it in this session and that it has not changed since: Write fails otherwise, so that nothing you have not seen gets overwritten. For a change to part of a file, Edit or MultiEdit is cheaper and safer.`
		js = `{"type":"object","properties":{
"file_path":{"type":"string","description":"The file to write: a path relative to the workspace, or an absolute path inside it."},
"content":{"type":"string","description":"The complete new content of the file."}},
"required":["file_path","content"]}`
		required = []string{"file_path", "content"}
	case NameEdit:
		desc = `Replaces text in a file: old_string must occur in the file exactly as given (same whitespace and indentation; copy it from Read output without the line-number prefix) and is replaced by new_string. When old_string occurs more than once the edit fails unless replace_all is set, so include enough surrounding lines to make it unique. The write is atomic and the result shows a diff.
Use MultiEdit for several changes to one file, and Write to create a file.`
		js = `{"type":"object","properties":{
"file_path":{"type":"string","description":"The file to change: a path relative to the workspace, or an absolute path inside it."},
"old_string":{"type":"string","description":"The exact text to replace; it must differ from new_string."},
"new_string":{"type":"string","description":"The text to put in its place (empty to delete old_string)."},
"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence of old_string instead of requiring exactly one."}},
"required":["file_path","old_string","new_string"]}`
		required = []string{"file_path", "old_string", "new_string"}
	case NameMultiEdit:
		desc = `Makes several replacements in one file in a single step. The edits are applied in order, each to the text the earlier ones left, with the same rules as Edit; if any one fails, none is applied and the file is left as it was. The write is atomic and the result shows a diff.`
		js = `{"type":"object","properties":{
"file_path":{"type":"string","description":"The file to change: a path relative to the workspace, or an absolute path inside it."},
"edits":{"type":"array","minItems":1,"description":"The replacements, applied in this order.","items":{"type":"object","properties":{
"old_string":{"type":"string","description":"The exact text to replace, as the file reads after the earlier edits."},
"new_string":{"type":"string","description":"The text to put in its place (empty to delete)."},
"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence instead of requiring exactly one."}},
"required":["old_string","new_string"]}}},
"required":["file_path","edits"]}`
		required = []string{"file_path", "edits"}
	case NameLS:
		desc = fmt.Sprintf(`Lists a folder of the workspace: names sorted, folders ending in "/". With depth above 1 it also lists the folders below, each entry as a path relative to the listed folder. Version-control folders (.git) and whatever .gitignore excludes are left out and named at the end. At most %d entries are shown; the result always gives the true total.`, o.LSMaxEntries)
		js = fmt.Sprintf(`{"type":"object","properties":{
"path":{"type":"string","description":"The folder to list, relative to the workspace or absolute inside it. Default: the workspace itself."},
"depth":{"type":"integer","minimum":1,"maximum":%d,"default":1,"description":"How many levels to list: 1 lists only the folder's own entries."},
"ignore":{"type":"array","items":{"type":"string"},"description":"More patterns to leave out, in .gitignore syntax (e.g. \"*.log\", \"testdata/\")."}}}`, lsMaxDepth)
	case NameGrep:
		desc = fmt.Sprintf(`Searches the workspace's text files for lines matching a regular expression (Go RE2 syntax: no backreferences or lookaround; one line at a time) and returns them as file:line:text. Files excluded by .gitignore, version-control folders and binary files are skipped. At most %d matching lines are returned; the result always gives the true totals, so narrow the pattern, path or glob when it says more exist. Use it instead of grep or rg in Bash.`, o.GrepMaxMatches)
		js = `{"type":"object","properties":{
"pattern":{"type":"string","description":"The regular expression to look for, e.g. \"func \\w+Handler\" or \"TODO|FIXME\"."},
"path":{"type":"string","description":"A folder to search below, or one file to search. Default: the whole workspace."},
"glob":{"type":"string","description":"Only search files whose name matches this glob, e.g. \"*.go\" or \"*.{ts,tsx}\"; a glob with a slash, like \"src/**/*.py\", matches the path."},
"ignore_case":{"type":"boolean","default":false,"description":"Match letters regardless of case."},
"output_mode":{"type":"string","enum":["content","files_with_matches"],"default":"content","description":"content returns the matching lines; files_with_matches returns only the names of the files that match."},
"head_limit":{"type":"integer","minimum":1,"description":"Return at most this many lines (or files); the totals still count all."}},
"required":["pattern"]}`
		required = []string{"pattern"}
	case NameBash:
		desc = fmt.Sprintf(`Runs a shell command with bash -c in the workspace folder and returns its output and exit code. Each call starts a fresh shell: cd and variables do not carry over to the next call. Standard input is closed, so interactive programs get end-of-file. The command and every process it starts are killed when it finishes, when its timeout passes (default %v, at most %v) or when the user interrupts; background processes do not outlive the call. Output longer than %d bytes per stream keeps its beginning and its end, with the true size noted.
Prefer Read, Grep, LS, Edit and Write for files; use Bash to build, test, run programs and use git.`, o.BashTimeout, o.BashMaxTimeout, o.BashMaxOutput)
		if o.Sandbox != nil {
			desc += "\n" + o.Sandbox.Note()
		}
		js = fmt.Sprintf(`{"type":"object","properties":{
"command":{"type":"string","description":"The command line to run."},
"timeout":{"type":"integer","minimum":1,"maximum":%d,"description":"Timeout in milliseconds (default %d)."},
"description":{"type":"string","description":"A few words on what the command does, for the user watching."}},
"required":["command"]}`, o.BashMaxTimeout.Milliseconds(), o.BashTimeout/time.Millisecond)
		required = []string{"command"}
	case NameTodoWrite:
		desc = `Replaces your todo list for the current task with the list given. Use it for work with several steps: write the steps down at the start, mark one in_progress when you begin it and completed as soon as it is done, and add steps you discover. The list is shown back to you as the conversation goes on, so it also keeps the plan in view after older messages have been condensed.`
		js = `{"type":"object","properties":{
"todos":{"type":"array","description":"The whole list, in order.","items":{"type":"object","properties":{
"content":{"type":"string","description":"The step, in the imperative (\"Run the tests\")."},
"status":{"type":"string","enum":["pending","in_progress","completed"]},
"activeForm":{"type":"string","description":"The step in the present continuous (\"Running the tests\"), shown while it is in progress."}},
"required":["content","status"]}}},
"required":["todos"]}`
		required = []string{"todos"}
	default:
		panic("tools: no schema for " + name)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(js)); err != nil {
		panic(fmt.Sprintf("tools: schema of %s: %v", name, err))
	}
	return toolSchema{desc: desc, schema: buf.Bytes(), required: required}
}
