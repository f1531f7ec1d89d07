package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What the plugin hands to agent check / compare for what a user types.
func TestKubectlFlagsReachTheCommands(t *testing.T) {
	nsOf := func(_, kctx string) (string, error) {
		if kctx == "prod" {
			return "payments", nil
		}
		return "default", nil
	}
	cases := []struct {
		args []string
		cmd  string
		want []string
	}{
		{[]string{"check"}, "check", nil},
		{[]string{"check", "--context", "kind-a", "-n", "shop"}, "check", []string{"--context", "kind-a", "--namespaces", "shop"}},
		{[]string{"check", "-nshop", "--kubeconfig=/k", "--output", "json"}, "check", []string{"--kubeconfig", "/k", "--namespaces", "shop", "--output", "json"}},
		{[]string{"check", "-A", "--fail-on", "critical"}, "check", []string{"--fail-on", "critical"}},
		{[]string{"check", "--namespace=shop"}, "check", []string{"--namespaces", "shop"}},
		{[]string{"compare", "shop/a", "shop/b"}, "compare", []string{"shop/a", "shop/b"}},
		{[]string{"compare", "-n", "shop", "a", "b"}, "compare", []string{"shop/a", "shop/b"}},
		{[]string{"compare", "a", "-o", "json", "other/b"}, "compare", []string{"default/a", "--output", "json", "other/b"}},
		{[]string{"compare", "--context", "prod", "a", "staging:b"}, "compare", []string{"--context", "prod", "payments/a", "staging:default/b"}},
		{[]string{"lint", "-f", "out.yaml", "-n", "shop"}, "lint", []string{"--namespace", "shop", "-f", "out.yaml"}},
		{[]string{"lint", "-"}, "lint", []string{"-"}},
		{[]string{"compare", "staging:apps/api-config", "prod:apps/api-config"}, "compare", []string{"staging:apps/api-config", "prod:apps/api-config"}},
		{[]string{"compare", "staging:api-config", "prod:api-config"}, "compare", []string{"staging:default/api-config", "prod:payments/api-config"}},
	}
	for _, c := range cases {
		var gotCmd string
		var got []string
		rec := func(name string) command {
			return func(args []string, _, _ io.Writer) int { gotCmd, got = name, args; return 0 }
		}
		var errb bytes.Buffer
		if code := run(c.args, io.Discard, &errb, commands{rec("check"), rec("compare"), rec("lint")}, nsOf); code != 0 {
			t.Errorf("%q: exit %d %s", c.args, code, errb.String())
			continue
		}
		if gotCmd != c.cmd || !slices.Equal(got, c.want) {
			t.Errorf("%q: ran %s %q, want %s %q", c.args, gotCmd, got, c.cmd, c.want)
		}
	}
}

func TestPluginUsageErrors(t *testing.T) {
	never := func([]string, io.Writer, io.Writer) int { t.Fatal("command ran"); return 0 }
	nsOf := func(string, string) (string, error) { return "default", nil }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, "unknown command"},
		{[]string{"check", "-n"}, "needs a value"},
		{[]string{"check", "-n", "a", "-A"}, "exclude each other"},
		{[]string{"compare", "-A", "a", "b"}, "-A makes no sense"},
		{[]string{"lint", "--context", "prod", "-"}, "not a cluster"},
		{nil, "usage:"},
	} {
		var errb bytes.Buffer
		if code := run(c.args, io.Discard, &errb, commands{never, never, never}, nsOf); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d %q, want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// The namespace of a context comes from the kubeconfig, as kubectl reads it.
func TestContextNamespace(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: staging
  context: {cluster: c, user: u, namespace: apps}
- name: bare
  context: {cluster: c, user: u}
current-context: bare
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for kctx, want := range map[string]string{"staging": "apps", "bare": "default", "": "default"} {
		if got, err := contextNamespace(kc, kctx); err != nil || got != want {
			t.Errorf("context %q: %q %v, want %q", kctx, got, err, want)
		}
	}
}
