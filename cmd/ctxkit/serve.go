package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/serve"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	var (
		listen, anthropicUp, openaiUp, geminiUp, dsn, summaryModel, policyName string
		keysFile                                                               string
		allowedHosts                                                           []string
		window                                                                 int
		keepValue                                                              float64
		failClosed                                                             bool
		replayClock                                                            bool
		maxBody                                                                int64
		retain                                                                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the context-engineering proxy in front of the Anthropic, OpenAI and Gemini APIs",
		Long: `ctxkit serve is a drop-in API proxy: point an agent's base URL at it and every
request gets ctxkit's context engineering (consumed tool results cleared in
cache-priced batches, old turns summarized near the window), while every byte
it did not change is forwarded as the client sent it.

  ctxkit serve &
  export ANTHROPIC_BASE_URL=http://127.0.0.1:8788          # Claude Code
  export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8788      # Gemini CLI
  # Codex CLI: a model provider in ~/.codex/config.toml with
  # base_url = "http://127.0.0.1:8788/v1" and wire_api = "responses"
  # (docs/clients.md has each recipe in full)

Cleared results can be recalled with the MCP server: claude mcp add ctxkit -- ctxkit mcp
The context window is each request's model's own (ctxkit's model table; 128000
for a model it does not know) unless --window sets one for every request. A
model whose window is smaller (a local one, a gateway's) is learned from its
first refusal that states it: that request is retried at it before the client
sees an error.
Status page at /, Prometheus metrics at /metrics, health at /healthz (503 when
the store cannot be read).

Shared by several people? Each API key is a tenant of its own (nothing one
does reaches another's requests); --keys FILE requires a proxy key per
person (lines "KEY TENANT [UPSTREAM-CREDENTIAL]") and can hold the real
upstream key. State is deleted --retain after a session's last request
(ctxkit serve gc runs that now). See docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if maxBody < 1024 {
				return fmt.Errorf("--max-body %d: must be at least 1024 bytes", maxBody)
			}
			var policy micro.Policy // nil: cache-aware on each provider's prices
			if policyName != "cache-aware" {
				p, err := micro.ByName(policyName, pricing.Anthropic())
				if err != nil {
					return fmt.Errorf("--policy: %w", err)
				}
				policy = p
			}
			if retain <= 0 {
				return fmt.Errorf("--retain %s: must be positive", retain)
			}
			if replayClock && !loopback(listen) {
				return fmt.Errorf("--replay-clock lets a client set the time its requests are judged by; it is for ctxkit bench --proxy on this machine: listen on a loopback address")
			}
			var keys *serve.Keys
			if keysFile != "" {
				k, err := serve.LoadKeys(keysFile)
				if err != nil {
					return err
				}
				keys = k
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			hosts := serve.AllowedHosts(listen, allowedHosts)
			if !loopback(listen) {
				if keys == nil {
					log.Warn("listening beyond this machine without --keys: anyone who can reach " + listen + " can use the proxy with their own key; give each person a proxy key (--keys FILE, docs/security.md)")
				}
				if len(allowedHosts) == 0 {
					log.Warn("listening on every interface without --allowed-hosts: any Host header is accepted (a web page could reach the proxy by DNS rebinding); list the names clients use")
				}
			}
			st, where, err := openStore(ctx, dsn)
			if err != nil {
				return err
			}
			defer st.Close()
			srv, err := serve.New(serve.Config{
				AnthropicUpstream: anthropicUp, OpenAIUpstream: openaiUp, GeminiUpstream: geminiUp, Window: window, Store: st,
				SummaryModel: summaryModel, FailClosed: failClosed, MaxBody: maxBody, Logger: log,
				Policy: policy, KeepValue: keepValue, Keys: keys, AllowedHosts: hosts, Retain: retain, ReplayClock: replayClock,
			})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			hs := serve.NewHTTPServer(srv)
			go srv.Maintain(ctx, time.Hour)
			log.Info("ctxkit serve listening", "addr", "http://"+ln.Addr().String(), "store", where,
				"anthropic", anthropicUp, "openai", openaiUp, "gemini", geminiUp, "window", windowDesc(window), "keep_value", keepValueDesc(keepValue))
			fmt.Fprintf(cmd.OutOrStdout(), "export ANTHROPIC_BASE_URL=http://%s\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				return nil
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8788", "address to listen on")
	f.StringVar(&anthropicUp, "anthropic-upstream", "https://api.anthropic.com", "Anthropic API base URL")
	f.StringVar(&openaiUp, "openai-upstream", "https://api.openai.com/v1", "OpenAI API base URL (with /v1)")
	f.StringVar(&geminiUp, "gemini-upstream", "https://generativelanguage.googleapis.com", "Gemini API base URL (without /v1beta)")
	windowVar(f, &window, 0, "context window in tokens, for every request (default: each request's model's window from ctxkit's model table, e.g. 200000 for claude-*, 400000 for gpt-5*, 1048576 for gemini-*; 128000 for a model it does not know)")
	f.StringVar(&dsn, "store", "", "state store: a SQLite file path (default ~/.ctxkit/serve.db) or a postgres:// URL")
	f.StringVar(&summaryModel, "summary-model", "", "model that writes summaries (default: the request's model)")
	f.StringVar(&policyName, "policy", "cache-aware", "when consumed tool results are cleared: cache-aware (when it pays on the provider's prices), eager or batched")
	keepValueVar(f, &keepValue)
	f.BoolVar(&failClosed, "fail-closed", false, "answer 502 when a request cannot be processed, instead of forwarding it unchanged")
	f.BoolVar(&replayClock, "replay-clock", false, "judge the provider's cache lifetime by each request's "+serve.HeaderReplayTime+" header (ctxkit bench --proxy sends the recording's times); loopback only")
	f.Int64Var(&maxBody, "max-body", 32<<20, "largest request body accepted, in bytes (larger ones get 413)")
	f.StringVar(&keysFile, "keys", "", "proxy keys file: lines \"KEY TENANT [UPSTREAM-CREDENTIAL]\" (UPSTREAM may be env:NAME); requests without a listed key get 401")
	f.StringSliceVar(&allowedHosts, "allowed-hosts", nil, "host names clients reach the proxy by (the Host header), besides the listen address's; others get 403")
	f.DurationVar(&retain, "retain", serve.DefaultRetain, "delete a session's state (decisions, summaries, originals, usage) this long after its last request")
	cmd.AddCommand(newServeGCCmd())
	return cmd
}

// loopback reports whether a listen address is this machine's only.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newServeGCCmd() *cobra.Command {
	var dsn string
	var retain time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete ctxkit serve's state older than --retain now",
		Long: `ctxkit serve gc deletes what the store holds past the retention period:
sessions idle longer than --retain with their decisions, summaries and
recall originals, and usage rows older than it. A running ctxkit serve
does the same every hour.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := storeExists(dsn); err != nil {
				return err
			}
			st, where, err := openStore(cmd.Context(), dsn)
			if err != nil {
				return err
			}
			defer st.Close()
			n, size, err := serve.GC(cmd.Context(), st, retain)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted %d rows older than %s; the store holds %d bytes\n", where, n, retain, size)
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "store", "", "state store: a SQLite file path (default ~/.ctxkit/serve.db) or a postgres:// URL")
	cmd.Flags().DurationVar(&retain, "retain", serve.DefaultRetain, "delete state this long after its session's last request")
	return cmd
}

// windowDesc is --window as the startup log says it.
// keepValueDesc is the knob as the log says it.
func keepValueDesc(v float64) string {
	if v == 0 {
		return fmt.Sprintf("%g (the default)", compact.DefaultKeepValue)
	}
	return fmt.Sprint(v)
}

func windowDesc(window int) string {
	if window == 0 {
		return "each model's"
	}
	return fmt.Sprint(window)
}
