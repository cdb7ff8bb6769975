package main

import (
	"fmt"
	"github.com/ctxkit/ctxkit/outfile"
	"net/url"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
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

// checkWindow checks a --window flag: a positive number of tokens when
// given.
func checkWindow(cmd *cobra.Command, name string, v int) error {
	return checkPositive(cmd, name, v)
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

// flagError rewords flag parsing errors without Go's function names.
func flagError(cmd *cobra.Command, err error) error {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	flag := m[2]
	if i := strings.LastIndex(flag, "--"); i >= 0 {
		flag = flag[i:]
	}
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number", "Float": "a number", "Bool": "true or false"}[m[3]]
	return fmt.Errorf("%s: %q is not %s", flag, m[1], want)
}

// checkCompactFlags checks ctxkit compact's flags before any work.
func checkCompactFlags(cmd *cobra.Command, input string, o compactOptions) error {
	for _, err := range []error{
		checkWindow(cmd, "window", o.window),
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
