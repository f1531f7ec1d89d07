package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{"--eso-service-account", "noslash", "--demo"},
		{"stray-argument"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}
