package conv

import "slices"

// Usage is the provider usage recorded for one API response, in Anthropic
// semantics: Input is the uncached input, CacheRead the input read from the
// prompt cache, CacheWrite the input written to it, Output the output
// (reasoning included).
type Usage struct {
	Input      int `json:"input"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
	Output     int `json:"output"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Input: u.Input + v.Input, CacheRead: u.CacheRead + v.CacheRead, CacheWrite: u.CacheWrite + v.CacheWrite, Output: u.Output + v.Output}
}

// RecordedUsage sums the usage recorded on the messages and says how many
// assistant messages carry one.
func (c *Conversation) RecordedUsage() (total Usage, responses int) {
	for i := range c.Messages {
		if u := c.Messages[i].Usage; u != nil {
			total = total.Add(*u)
			responses++
		}
	}
	return total, responses
}

// EpochStart returns the index of the first message of the epoch that
// message i belongs to (0 without recorded compactions).
func (c *Conversation) EpochStart(i int) int {
	start := 0
	for _, e := range c.Epochs {
		if e > i {
			break
		}
		start = e
	}
	return start
}

// isEpochStart reports whether a recorded compaction starts an epoch at
// message i (> 0).
func (c *Conversation) isEpochStart(i int) bool {
	if i <= 0 || len(c.Epochs) == 0 {
		return false
	}
	_, found := slices.BinarySearch(c.Epochs, i)
	return found
}

// Epoch returns a shallow view of epoch k (0 is the part before the first
// recorded compaction): system and tools, and the epoch's messages, as the
// model saw them. The messages share storage with c.
func (c *Conversation) Epoch(k int) *Conversation {
	bounds := append([]int{0}, c.Epochs...)
	bounds = append(bounds, len(c.Messages))
	if k < 0 || k+1 >= len(bounds) {
		return nil
	}
	return &Conversation{System: c.System, Tools: c.Tools, Messages: c.Messages[bounds[k]:bounds[k+1]], Seq: c.Seq}
}

// LastEpoch is the epoch the recording ended in: what the model saw last.
func (c *Conversation) LastEpoch() *Conversation { return c.Epoch(len(c.Epochs)) }
