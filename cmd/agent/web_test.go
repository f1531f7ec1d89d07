package main

import (
	"bytes"
	"io"
	"net"
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

// --ui.secret-page turns /secret/NS/NAME on or off, from the command line or
// DRIFTWATCH_UI_SECRET_PAGE; unset, it is on only when --web.config.file
// makes every request authenticate, and in --demo. A value that is not a
// boolean is an error naming the variable.
func TestSecretPageFlag(t *testing.T) {
	basic := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(basic, []byte("basic_auth_users:\n  prom: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	headers := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(headers, []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		env     map[string]string
		wantOff bool
	}{
		{nil, nil, true},
		{[]string{"--demo"}, nil, false},
		{[]string{"--web.config.file", basic}, nil, false},
		{[]string{"--web.config.file", headers}, nil, true},
		{[]string{"--web.config.file", basic, "--ui.secret-page=false"}, nil, true},
		{[]string{"--ui.secret-page=true"}, nil, false},
		{[]string{"--ui.secret-page=false"}, nil, true},
		{[]string{"--ui.secret-page"}, map[string]string{"DRIFTWATCH_UI_SECRET_PAGE": "false"}, false},
		{nil, map[string]string{"DRIFTWATCH_UI_SECRET_PAGE": "false"}, true},
		{nil, map[string]string{"DRIFTWATCH_UI_SECRET_PAGE": "true"}, false},
		{nil, map[string]string{"DRIFTWATCH_WEB_CONFIG_FILE": basic}, false},
	} {
		var o options
		fs := newFlags(&o, io.Discard)
		if err := parseFlags(fs, c.args, func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }); err != nil {
			t.Fatalf("%v %v: %v", c.args, c.env, err)
		}
		if _, err := reconcileSecretPage(fs, o.demo, &o.web); err != nil {
			t.Fatalf("%v %v: %v", c.args, c.env, err)
		}
		if o.web.UIOptions.NoSecretPage != c.wantOff || !o.web.UI {
			t.Errorf("%v %v: secret page off %v, ui %v", c.args, c.env, o.web.UIOptions.NoSecretPage, o.web.UI)
		}
	}
	var o options
	err := parseFlags(newFlags(&o, io.Discard), nil, func(k string) (string, bool) { return "maybe", k == "DRIFTWATCH_UI_SECRET_PAGE" })
	if err == nil || !strings.Contains(err.Error(), "DRIFTWATCH_UI_SECRET_PAGE") {
		t.Errorf("DRIFTWATCH_UI_SECRET_PAGE=maybe: %v", err)
	}
}

// A --debug-pprof address that is not loopback, or a probe address in use,
// stops the agent with an error naming the flag.
func TestListenerErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--demo", "--listen", "127.0.0.1:0", "--debug-pprof", "0.0.0.0:6060"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "--debug-pprof") {
		t.Errorf("--debug-pprof 0.0.0.0:6060: exit %d, stderr %q", code, errb.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errb.Reset()
	if code := run([]string{"--demo", "--listen", "127.0.0.1:0", "--health-probe-bind-address", ln.Addr().String()}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "--health-probe-bind-address") {
		t.Errorf("--health-probe-bind-address in use: exit %d, stderr %q", code, errb.String())
	}
}
