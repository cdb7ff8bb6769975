package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// checkPositive fails unless the int flag name is positive. A flag whose
// zero value means "the default" is checked only when given.
func checkPositive(cmd *cobra.Command, name string, v int) error {
	if v > 0 {
		return nil
	}
	if v == 0 && !cmd.Flags().Changed(name) {
		return nil
	}
	return fmt.Errorf("--%s must be a positive number, got %d", name, v)
}

// checkNonNegative fails when the int flag name is negative.
func checkNonNegative(name string, v int) error {
	if v < 0 {
		return fmt.Errorf("--%s must not be negative, got %d", name, v)
	}
	return nil
}

// checkRange fails unless lo <= v <= hi.
func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("--%s must be between %d and %d, got %d", name, lo, hi, v)
	}
	return nil
}

// windowFlag is the --window flag of every command: the number of tokens
// given, checked as it is parsed by engine.ParseWindow, so every command
// takes the same windows and says the same thing about the rest.
type windowFlag struct{ p *int }

func (w windowFlag) Set(s string) error {
	n, err := engine.ParseWindow(s)
	if err != nil {
		return err
	}
	*w.p = n
	return nil
}

func (w windowFlag) String() string {
	if w.p == nil {
		return "0"
	}
	return strconv.Itoa(*w.p)
}

func (w windowFlag) Type() string { return "int" }

// windowVar defines --window on f, holding value until it is given.
func windowVar(f *pflag.FlagSet, p *int, value int, usage string) {
	*p = value
	f.Var(windowFlag{p}, "window", usage)
}

// keepValueFlag is the --keep-value flag of every command that runs the
// engine (agent, serve, compact, bench): the knob between cost and recall
// (engine.Config.KeepValue), checked as it is parsed by
// engine.CheckKeepValue.
type keepValueFlag struct{ p *float64 }

func (k keepValueFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	if err := engine.CheckKeepValue(v); err != nil {
		return err
	}
	*k.p = v
	return nil
}

func (k keepValueFlag) String() string {
	if k.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*k.p, 'g', -1, 64)
}

func (k keepValueFlag) Type() string { return "float" }

// keepValueUsage says what the knob does, the same for every command.
const keepValueUsage = "the knob between cost and recall: what keeping a token in view for one more request is worth, as a multiple of its read price (0: the default, 1; higher keeps more in view and costs more; at 1 and below a compaction keeps only what it must; ctxkit bench --frontier shows what each setting costs)"

// keepValueVar defines --keep-value on f.
func keepValueVar(f *pflag.FlagSet, p *float64) {
	f.Var(keepValueFlag{p}, "keep-value", keepValueUsage)
}

// checkURL fails at once on a base URL no request could go to, rather than
// after retries.
func checkURL(flag, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q is not a URL: give one like http://localhost:11434/v1 or https://api.example.com", flag, v)
	}
	return nil
}

// flagValueError matches pflag's message for a value that does not parse.
var flagValueError = regexp.MustCompile(`^invalid argument "(.*)" for "(.*?)" flag: strconv\.Parse(Int|Uint|Float|Bool)`)

// flagSetError matches pflag's message for a value a flag's own Set
// refused, with the flag and that message.
var flagSetError = regexp.MustCompile(`(?s)^invalid argument ".*" for "(.*?)" flag: (.*)$`)

// flagError rewords flag parsing errors without Go's function names.
func flagError(cmd *cobra.Command, err error) error {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		if m := flagSetError.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("%s: %s", longFlag(m[1]), m[2])
		}
		return err
	}
	flag := longFlag(m[2])
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number", "Float": "a number", "Bool": "true or false"}[m[3]]
	return fmt.Errorf("%s: %q is not %s", flag, m[1], want)
}

// oneFile is the Args check of a command that reads one session file: it
// says, in the user's words, what to give when the file is missing.
func oneFile(usage string) cobra.PositionalArgs {
	return oneArg("a session file, as in " + usage)
}

// oneArg fails unless exactly one argument is given, saying what it is.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s needs %s", cmd.Name(), what)
		case len(args) > 1:
			return fmt.Errorf("%s takes one argument, %s; got %d: %s", cmd.Name(), what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// longFlag is the long form of pflag's "-w, --window" flag name.
func longFlag(flag string) string {
	if i := strings.LastIndex(flag, "--"); i >= 0 {
		return flag[i:]
	}
	return flag
}

// checkCompactFlags checks ctxkit compact's flags before any work.
func checkCompactFlags(cmd *cobra.Command, input string, o compactOptions) error {
	for _, err := range []error{
		checkNonNegative("keep", o.keep),
		checkPositive(cmd, "clear-at-least", o.clearAtLeast),
		checkPositive(cmd, "max-tokens", o.maxTokens),
		checkURL("--base-url", o.baseURL),
	} {
		if err != nil {
			return err
		}
	}
	if o.guardTokens < -1 {
		return fmt.Errorf("--guard-tokens must be a positive number of tokens, or -1 for never, got %d", o.guardTokens)
	}
	if o.out != "" {
		return outfile.Check(o.out, outfile.Options{Inputs: []string{input}, Force: o.force, Flag: "-o"})
	}
	return nil
}
