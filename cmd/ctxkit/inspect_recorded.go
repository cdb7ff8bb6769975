package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/pricing"
)

// importDetails is what the import itself says about the recording: the
// records it left out by type, the recorded compactions, the companions
// of a Claude Code session, and the usage the provider recorded.
type importDetails struct {
	Records   int                        `json:"records,omitempty"`
	Skipped   map[string]int             `json:"skipped"`
	Epochs    int                        `json:"epochs"`
	Subagents []string                   `json:"subagents,omitempty"`
	Persisted *importer.PersistedOutputs `json:"persisted_outputs,omitempty"`
	Recorded  *recordedUsage             `json:"recorded,omitempty"`
}

// recordedUsage is what the session was billed, from the usage its
// recording holds, at one pricing table.
type recordedUsage struct {
	Responses  int        `json:"responses"` // assistant messages with recorded usage
	Of         int        `json:"of"`        // assistant messages
	Usage      conv.Usage `json:"usage"`
	Pricing    string     `json:"pricing"`
	Input      float64    `json:"input_dollars"`
	CacheWrite float64    `json:"cache_write_dollars"`
	CacheRead  float64    `json:"cache_read_dollars"`
	Output     float64    `json:"output_dollars"`
	Dollars    float64    `json:"dollars"`
}

// defaultPricing is the table a session is billed at unless --pricing
// names one: the provider the agent talks to.
func defaultPricing(format string) pricing.Table {
	if format == importer.FormatCodex {
		return pricing.OpenAI()
	}
	return pricing.Anthropic()
}

// billed prices the usage recorded in c at table t; nil when the recording
// has none.
func billed(c *conv.Conversation, t pricing.Table) *recordedUsage {
	u, n := c.RecordedUsage()
	if n == 0 {
		return nil
	}
	r := &recordedUsage{Responses: n, Usage: u, Pricing: t.Name,
		Input:      t.Cost(u.Input, 0, 0, 0),
		CacheWrite: t.Cost(0, u.CacheWrite, 0, 0),
		CacheRead:  t.Cost(0, 0, u.CacheRead, 0),
		Output:     t.Cost(0, 0, 0, u.Output),
		Dollars:    t.Cost(u.Input, u.CacheWrite, u.CacheRead, u.Output),
	}
	for i := range c.Messages {
		if c.Messages[i].Role == conv.RoleAssistant {
			r.Of++
		}
	}
	return r
}

func details(s *importer.Session, t pricing.Table) importDetails {
	d := importDetails{Records: s.Records, Skipped: map[string]int{}, Epochs: len(s.Conv.Epochs), Subagents: s.Subagents}
	maps.Copy(d.Skipped, s.Conv.Skipped)
	if s.Persisted != (importer.PersistedOutputs{}) {
		p := s.Persisted
		d.Persisted = &p
	}
	d.Recorded = billed(s.Conv, t)
	return d
}

// writeDetails prints the import details under the report's tables.
func (d *importDetails) writeDetails(out io.Writer) {
	if d.Epochs > 0 {
		fmt.Fprintf(out, "compacted   %s recorded (each summary replaced everything before it)\n", plural(d.Epochs, "time"))
	}
	if len(d.Skipped) > 0 {
		keys := slices.SortedFunc(maps.Keys(d.Skipped), func(a, b string) int {
			return cmp.Or(cmp.Compare(d.Skipped[b], d.Skipped[a]), cmp.Compare(a, b))
		})
		parts := make([]string, len(keys))
		n := 0
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, d.Skipped[k])
			n += d.Skipped[k]
		}
		of := ""
		if d.Records > 0 {
			of = fmt.Sprintf(" of %d", d.Records)
		}
		fmt.Fprintf(out, "skipped     %d record(s)%s, not conversation: %s\n", n, of, strings.Join(parts, ", "))
	}
	if p := d.Persisted; p != nil {
		fmt.Fprintf(out, "saved outputs  %d large tool output(s) Claude Code saved instead of sending (%d beside the session, %d missing; the model saw a preview)\n", p.Found+p.Missing, p.Found, p.Missing)
	}
	for _, a := range d.Subagents {
		fmt.Fprintf(out, "sub-agent   %s\n", filepath.Base(a))
	}
	if r := d.Recorded; r != nil {
		u := r.Usage
		fmt.Fprintf(out, "\nrecorded usage (%d of %d responses), billed at %s prices\n", r.Responses, r.Of, r.Pricing)
		fmt.Fprintf(out, "  input        %12s tokens  $%9.4f\n", thousands(u.Input), r.Input)
		fmt.Fprintf(out, "  cache writes %12s tokens  $%9.4f\n", thousands(u.CacheWrite), r.CacheWrite)
		fmt.Fprintf(out, "  cache reads  %12s tokens  $%9.4f\n", thousands(u.CacheRead), r.CacheRead)
		fmt.Fprintf(out, "  output       %12s tokens  $%9.4f\n", thousands(u.Output), r.Output)
		fmt.Fprintf(out, "  total        %12s tokens  $%9.4f\n", thousands(u.Input+u.CacheWrite+u.CacheRead+u.Output), r.Dollars)
	}
}
