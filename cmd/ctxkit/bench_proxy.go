package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/bench/proxy"
)

// proxyFlags are bench's flags for measuring a running proxy.
type proxyFlags struct {
	url      string // --proxy
	upstream string // --upstream
	wire     string // --wire
	store    string // --proxy-store
}

func (p *proxyFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.url, "proxy", "", "also replay every session through the proxy at this URL (strategy \"proxy\"), as its client would send it, into a stand-in upstream the bench runs (see --upstream)")
	f.StringVar(&p.wire, "wire", "", "the wire the serve and proxy strategies replay every session on: "+strings.Join(proxy.Wires, ", ")+" (default: each session's own client: Codex rollouts as Codex CLI on the Responses API, Gemini CLI sessions on the Gemini API, others by the price table)")
	f.StringVar(&p.upstream, "upstream", "127.0.0.1:8789", "with --proxy: the address the stand-in upstream listens on; start the proxy with its upstream there")
	f.StringVar(&p.store, "proxy-store", "", "with --proxy running ctxkit serve: its --store, read (as ctxkit mcp reads it) for the originals the proxy's recall ids name, so evidence recall credits them; without it only ids in changed tool calls and results count")
}

// factories are the strategies named by names, among bench's own, ctxkit
// serve in-process ("serve", only when named: it runs a proxy per
// session) and, with --proxy, the running proxy ("proxy", in "all" too),
// whose stand-in upstream is started here; stop stops it.
func (p *proxyFlags) factories(cmd *cobra.Command, names string) (fs []bench.Factory, stop func(), err error) {
	stop = func() {}
	if p.wire != "" && !slices.Contains(proxy.Wires, p.wire) {
		return nil, stop, fmt.Errorf("--wire %q: want one of %s", p.wire, strings.Join(proxy.Wires, ", "))
	}
	all := append(bench.Strategies(), proxy.ServeWire(p.wire))
	if p.url != "" {
		u, err := url.Parse(p.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, stop, fmt.Errorf("--proxy %q: want the proxy's base URL, such as http://127.0.0.1:8788", p.url)
		}
		ln, err := net.Listen("tcp", p.upstream)
		if err != nil {
			return nil, stop, fmt.Errorf("--upstream %s: %w", p.upstream, err)
		}
		up := proxy.NewUpstream(extractiveSummary)
		hs := &http.Server{Handler: up, ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		stop = func() { _ = hs.Close() }
		base := "http://" + ln.Addr().String()
		fmt.Fprintf(cmd.ErrOrStderr(), "ctxkit bench: stand-in upstream at %s (the proxy's Anthropic and Gemini upstream; OpenAI: %s/v1)\n", base, base)
		if err := reachable(cmd.Context(), p.url); err != nil {
			stop()
			return nil, func() {}, fmt.Errorf("--proxy %s: %w (start the proxy first, with its upstream at %s, e.g. ctxkit serve --anthropic-upstream %s --openai-upstream %s/v1 --gemini-upstream %s --window N --replay-clock)", p.url, err, base, base, base, base)
		}
		var recall func(key string) proxy.Recaller
		if p.store != "" {
			st, _, err := openStore(cmd.Context(), p.store)
			if err != nil {
				stop()
				return nil, func() {}, fmt.Errorf("--proxy-store: %w", err)
			}
			prev := stop
			stop = func() { prev(); _ = st.Close() }
			recall = func(key string) proxy.Recaller { return proxy.StoreRecall(st, key) }
		}
		all = append(all, proxy.RemoteWire(p.url, up, p.wire, recall))
	}
	if names == "" || names == "all" {
		// All of bench's own, and the running proxy when there is one;
		// serve (a proxy per session) when named.
		fs = bench.Strategies()
		if p.url != "" {
			fs = append(fs, all[len(all)-1])
		}
		return fs, stop, nil
	}
	fs, err = bench.LookupIn(names, all)
	if err != nil {
		stop()
		return nil, func() {}, err
	}
	return fs, stop, nil
}

// reachable reports whether anything answers HTTP at u.
func reachable(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not reachable: %w", err)
	}
	resp.Body.Close()
	return nil
}
