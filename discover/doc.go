// Package discover finds the coding-agent sessions recorded on this machine,
// at the places each agent keeps them (Claude Code, Codex CLI, Gemini CLI,
// Cline, Roo Code and Kilo Code, opencode), honouring the agents' own
// overrides (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_DATA_HOME, XDG_CONFIG_HOME,
// APPDATA). It only lists: importer.Load reads what it finds.
package discover
