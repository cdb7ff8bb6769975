package serve

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/ctxkit/ctxkit/textfmt"
)

var userSession = regexp.MustCompile(`session_([0-9A-Za-z-]{8,})`)

// sessionKey names the session a request belongs to: Claude Code's
// x-claude-code-session-id header, else the session in metadata.user_id,
// else OpenAI's prompt_cache_key, else a hash of the system prompt and
// the first user message.
func sessionKey(h http.Header, r *request) string {
	if id := h.Get("X-Claude-Code-Session-Id"); id != "" {
		return "cc:" + textfmt.Clip(id, 128)
	}
	if r.UserID != "" {
		if strings.HasPrefix(r.UserID, "{") {
			var u struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal([]byte(r.UserID), &u) == nil && u.SessionID != "" {
				return "cc:" + textfmt.Clip(u.SessionID, 128)
			}
		}
		if m := userSession.FindStringSubmatch(r.UserID); m != nil {
			return "cc:" + m[1]
		}
	}
	if r.CacheKey != "" {
		return "pck:" + textfmt.Clip(r.CacheKey, 128)
	}
	h2 := sha256.New()
	h2.Write([]byte(r.Provider))
	if r.System.ok() {
		hashValue(h2, r.Body, r.System)
	}
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			h2.Write([]byte(m.Hash))
			continue
		}
		if m.Role == "user" {
			h2.Write([]byte(m.Hash))
			break
		}
	}
	return "h:" + sum(h2)
}
