package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLintSubcommand: `agent lint` is dispatched to the lint command.
func TestLintSubcommand(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"lint", "--rules"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "implicit_creation_policy") {
		t.Errorf("agent lint --rules: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	out.Reset()
	errs.Reset()
	if code := run([]string{"lint"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "no input") {
		t.Errorf("agent lint without input: exit %d, stderr %s", code, errs.String())
	}
}
