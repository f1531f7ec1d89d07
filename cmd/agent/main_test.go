package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A world-readable Argo CD token file is refused at start with a clear message
// and exit code 2, before anything connects.
func TestRefusesWorldReadableArgoToken(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("argocd-token-value-123"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"--demo", "--listen", "127.0.0.1:0", "--argocd-server", "https://argocd.invalid",
		"--argocd-token-file", tok}, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "readable") {
		t.Fatalf("the message should say the file is readable by others: %q", errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "argocd-token-value") {
		t.Fatal("the token leaked into the output")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--log-format", "xml"},
		{"--log-level", "loud"},
		{"--shard", "3", "--total-shards", "3"},
		{"--shard-watch", "pods", "--demo"},
		{"--shard-watch", "namespaces", "--namespaces", "a,b", "--demo"},
		{"--eso-service-account", "noslash", "--demo"},
		{"stray-argument"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

// Every flag can come from DRIFTWATCH_<FLAG>; a value that does not parse is an
// error naming the variable (it used to be dropped silently); the command line
// wins over the environment.
func TestFlagsFromEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	var o options
	var errb bytes.Buffer
	fs := newFlags(&o, &errb)
	if err := parseFlags(fs, []string{"--flip-window", "2h"}, env("DRIFTWATCH_FLIP_WINDOW", "5m", "DRIFTWATCH_NO_KEY_LABEL", "true",
		"DRIFTWATCH_FLAP_THRESHOLD", "4", "DRIFTWATCH_ARGOCD_NOT_CONVERGING_THRESHOLD", "3m")); err != nil {
		t.Fatal(err)
	}
	if o.flipWindow.String() != "2h0m0s" || !o.noKeyLabel || o.flapThreshold != 4 || o.notConverging.String() != "3m0s" {
		t.Fatalf("options %+v", o)
	}
	for _, bad := range [][]string{{"DRIFTWATCH_FLIP_WINDOW", "an hour"}, {"DRIFTWATCH_NO_KEY_LABEL", "yes please"},
		{"DRIFTWATCH_SYNC_OVERDUE_FACTOR", "three"}, {"DRIFTWATCH_SHARD", "1.5"}} {
		var o options
		fs := newFlags(&o, &errb)
		err := parseFlags(fs, nil, env(bad...))
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%q: err %v, want an error naming the variable", bad[0], bad[1], err)
		}
	}
}

// The README's flag table and the real flag set agree (as kube-state-metrics'
// TestDocumentation holds its docs to its flags).
func TestREADMEFlagTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## Flags")
	end := strings.Index(doc[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("README.md has no ## Flags section")
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(doc[start:start+1+end], "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, f := range regexp.MustCompile("`--([a-z0-9.-]+)`").FindAllStringSubmatch(first, -1) {
			documented[f[1]] = true
		}
	}
	var o options
	fs := newFlags(&o, &bytes.Buffer{})
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("flag --%s is not in README.md's flag table", f.Name)
		}
		delete(documented, f.Name)
	})
	for f := range documented {
		t.Errorf("README.md documents --%s, which the agent does not have", f)
	}
}

func TestDefaultGC(t *testing.T) {
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if pct, ok := defaultGC(lookup); !ok || pct != defaultGCPercent {
		t.Fatalf("GOGC unset: defaultGC = %d, %v; want %d, true", pct, ok, defaultGCPercent)
	}
	for _, v := range []string{"100", "off", ""} {
		env["GOGC"] = v
		if pct, ok := defaultGC(lookup); ok {
			t.Errorf("GOGC=%q: defaultGC = %d, true; the user's GOGC must stand", v, pct)
		}
	}
}
