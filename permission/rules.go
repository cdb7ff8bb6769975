package permission

// Rules are allow and deny patterns, as they appear in a config file:
// {"allow": ["Bash(go test:*)"], "deny": ["Bash(rm:*)"]}.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}
