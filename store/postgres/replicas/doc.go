// Package replicas holds the end-to-end tests of ctxkit serve running as
// several replicas on one PostgreSQL database (store/postgres): replicas
// alternating one session's requests build the upstream bytes one replica
// builds; concurrent first decisions on one session have one winner; the
// database stopped mid-session makes the proxy fail open and report
// itself degraded until it comes back; a replica killed with SIGKILL
// mid-stream (or mid-summary) is replaced by the other on the client's
// retry with the same decisions; ctxkit mcp recalls a block the other
// replica cleared. It has no code of its own, only tests.
package replicas
