package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/ctxkit/ctxkit/wire"
)

func newConvertCmd() *cobra.Command {
	var (
		to, out, model string
		maxTokens      int
		indent, force  bool
		opts           importer.Options
	)
	cmd := &cobra.Command{
		Use:   "convert FILE --to anthropic|openai [-o OUT]",
		Short: "Write a recorded session as an Anthropic or OpenAI request body",
		Long: `Convert imports a recorded agent session (any format inspect reads) and writes
the conversation as a provider request body: the Anthropic Messages API
(--to anthropic), OpenAI chat completions (--to openai) or OpenAI's
Responses API with the whole history as input items (--to responses). What a format
cannot carry is mapped as the wire package documents (for OpenAI: thinking
becomes <thinking> text without its signature, tool errors a "[tool error]"
line, images inside tool results move to the next user message).

The body goes to standard output, or to OUT, which is written only once the
whole body is ready. Import fixes and warnings go to standard error.`,
		Example: `  ctxkit convert session.jsonl --to anthropic -o request.json
  ctxkit convert run.traj.json --to openai --model gpt-5 | jq '.messages | length'`,
		Args: oneFile("ctxkit convert FILE --to anthropic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var encode func(*llm.Request) ([]byte, error)
			switch to {
			case "anthropic":
				encode = wire.EncodeAnthropic
			case "openai":
				encode = wire.EncodeOpenAI
			case "responses":
				encode = wire.EncodeResponses
			case "":
				return fmt.Errorf("convert: --to is required (anthropic, openai or responses)")
			default:
				return fmt.Errorf("convert: --to %q: want anthropic, openai or responses", to)
			}
			if err := checkPositive(cmd, "max-tokens", maxTokens); err != nil {
				return err
			}
			dest := outfile.Options{Inputs: args, Force: force, Flag: "-o"}
			if out != "" && out != "-" {
				if err := outfile.Check(out, dest); err != nil {
					return fmt.Errorf("convert: %w", err)
				}
			}
			s, err := importer.Load(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			for _, f := range s.Fixes {
				fmt.Fprintln(stderr, "ctxkit: fixed:", f)
			}
			for _, w := range s.Warnings {
				fmt.Fprintln(stderr, "ctxkit: warning:", w)
			}
			model = requestModel(stderr, "convert", model, s.Model, to)
			c := s.Conv
			if n := len(c.Epochs); n > 0 {
				// The agent compacted the session: what it sent last is the
				// last epoch, its summary and what follows.
				c = c.LastEpoch()
				fmt.Fprintf(stderr, "ctxkit: note: the agent compacted this session %d time(s); the body holds what followed the last compaction\n", n)
			}
			req := &llm.Request{Model: model, MaxTokens: maxTokens, System: c.System, Tools: c.Tools, Messages: c.Messages}
			body, err := encode(req)
			if err != nil {
				return fmt.Errorf("convert %s: %w", args[0], err)
			}
			if indent {
				var buf bytes.Buffer
				if err := json.Indent(&buf, body, "", "  "); err != nil {
					return err
				}
				body = buf.Bytes()
			}
			body = append(body, '\n')
			if calls := unanswered(c); len(calls) > 0 {
				fmt.Fprintf(stderr, "ctxkit: note: the session ends with unanswered tool calls (%s); as a request it needs their results first\n", strings.Join(calls, ", "))
			}
			if out == "" || out == "-" {
				_, err := cmd.OutOrStdout().Write(body)
				return err
			}
			if err := outfile.Write(out, body, dest); err != nil {
				return fmt.Errorf("convert: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "provider format to write: anthropic, openai (chat completions) or responses (OpenAI's Responses API, as Codex sends it)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the body to this file instead of standard output")
	cmd.Flags().StringVar(&model, "model", "", "model to put in the body (default: the recorded one)")
	cmd.Flags().IntVar(&maxTokens, "max-tokens", 8192, "max_tokens (max_completion_tokens for openai) to put in the body")
	cmd.Flags().BoolVar(&indent, "indent", false, "indent the JSON for reading")
	cmd.Flags().BoolVar(&force, "force", false, "with -o: write in place onto a device, a FIFO or through a symbolic link instead of refusing")
	cmd.Flags().StringVar(&opts.Format, "format", "", "read FILE as this format instead of detecting it")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "fail on any damaged line or invalid UTF-8 instead of skipping it")
	return cmd
}

// unanswered lists the tool calls of a final assistant message, which a
// recording that stopped at a call (submit, finish) leaves without results.
func unanswered(c *conv.Conversation) []string {
	n := len(c.Messages)
	if n == 0 || c.Messages[n-1].Role != conv.RoleAssistant {
		return nil
	}
	var calls []string
	for _, b := range c.Messages[n-1].Blocks {
		if b.Type == conv.TypeToolUse {
			calls = append(calls, b.Name+" "+b.ToolUseID)
		}
	}
	return calls
}

// requestModel is the model a request body written from a recording names:
// --model, else the recording's, else the provider's default, with a note
// on w saying so.
func requestModel(w io.Writer, command, flag, recorded, provider string) string {
	if m := cmp.Or(flag, recorded); m != "" {
		return m
	}
	m := defaultAnthropicModel
	if provider == "openai" {
		m = defaultOpenAIModel
	}
	fmt.Fprintf(w, "ctxkit: %s: the recording names no model; the request body names %s (--model sets another)\n", command, m)
	return m
}
