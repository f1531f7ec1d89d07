package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --no-key-label turns the page off unless --ui is asked for, which is then
// an error: the page shows key names.
func TestNoKeyLabelAndTheUI(t *testing.T) {
	for _, c := range []struct {
		args    []string
		env     string
		wantUI  bool
		wantErr bool
	}{
		{nil, "", true, false},
		{[]string{"--no-key-label"}, "", false, false},
		{[]string{"--no-key-label", "--ui"}, "", false, true},
		{[]string{"--no-key-label", "--ui=false"}, "", false, false},
		{[]string{"--no-key-label"}, "true", false, true},
	} {
		if c.env != "" {
			t.Setenv("DRIFTWATCH_UI", c.env)
		}
		var o options
		fs := newFlags(&o, io.Discard)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := reconcileUI(fs, o.noKeyLabel, &o.web)
		if (err != nil) != c.wantErr || err == nil && o.web.UI != c.wantUI {
			t.Errorf("%v env %q: ui %v err %v", c.args, c.env, o.web.UI, err)
		}
		os.Unsetenv("DRIFTWATCH_UI")
	}
}

// A web configuration that does not load stops the agent at start.
func TestBadWebConfigStopsTheAgent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(p, []byte("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--demo", "--listen", "127.0.0.1:0", "--web.config.file", p}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "web.config.file") {
		t.Errorf("exit %d; stderr %q", code, errb.String())
	}
}
