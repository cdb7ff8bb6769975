package assemble

import (
	"regexp"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Sources of injections beyond the ones conv names, so that each gets its
// own tag (seed 001 §2.3). conv.DefaultMeta gives them the tool tier: the
// harness relays them but did not write them.
const (
	SourceHookPreTool  conv.Source = "hook_pre_tool"
	SourceIDESelection conv.Source = "ide_selection"
	SourceIDEOpened    conv.Source = "ide_opened"
)

// Tag names the XML tag an injection from src is wrapped in. Anything the
// table does not know is a system reminder.
func Tag(src conv.Source) string {
	switch src {
	case conv.SourceHook:
		return "user-prompt-submit-hook"
	case SourceHookPreTool:
		return "pre-tool-use-hook"
	case SourceIDESelection:
		return "ide_selection"
	case SourceIDEOpened:
		return "ide_opened_file"
	default:
		return "system-reminder"
	}
}

// closerRE matches the closing text of tag in any case and with any spacing
// a lenient reader would still take for it: "</tag", "< /TAG", "<\t/ tag".
func closerRE(tag string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)<(\s*/\s*` + regexp.QuoteMeta(tag) + `)`)
}

// Escape makes content safe to put inside <tag>…</tag>: every closing text
// of that tag has its "<" written as "&lt;", so a file or a tool output
// cannot close the tag early and go on speaking as the harness.
func Escape(tag, content string) string {
	if !strings.Contains(content, "<") {
		return content
	}
	return closerRE(tag).ReplaceAllString(content, "&lt;$1")
}

// Wrap returns content inside tag, escaped.
func Wrap(tag, content string) string {
	return "<" + tag + ">\n" + Escape(tag, content) + "\n</" + tag + ">"
}

// wrapBlock returns the injection b as a text block wrapped in the tag of
// its source, keeping its id and metadata. A block that is not text (an
// image from the IDE) goes in as it is.
func wrapBlock(b conv.Block, tags map[conv.Source]string) conv.Block {
	if b.Type != conv.TypeText {
		return b
	}
	tag, ok := tags[b.Meta.Source]
	if !ok {
		tag = Tag(b.Meta.Source)
	}
	b.Text = Wrap(tag, b.Text)
	b.Meta.Tokens = 0
	return b
}
