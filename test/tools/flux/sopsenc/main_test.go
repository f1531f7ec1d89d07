package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keygen runs `sopsenc keygen` and writes the identity to a file.
func keygen(t *testing.T) (idFile, recipient string) {
	t.Helper()
	var out bytes.Buffer
	if err := run([]string{"keygen"}, nil, &out); err != nil {
		t.Fatalf("keygen: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "AGE-SECRET-KEY-1") || !strings.HasPrefix(lines[1], "age1") {
		t.Fatalf("keygen printed %q, want an identity and a recipient line", out.String())
	}
	idFile = filepath.Join(t.TempDir(), "identity.agekey")
	if err := os.WriteFile(idFile, []byte(lines[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return idFile, lines[1]
}

func runOK(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, bytes.NewReader(stdin), &out); err != nil {
		t.Fatalf("sopsenc %s: %v", strings.Join(args, " "), err)
	}
	return out.Bytes()
}

var encValue = regexp.MustCompile(`ENC\[AES256_GCM,data:[^,]*,iv:[^,]+,tag:[^,]+,type:[a-z]+\]`)

func TestRoundTrip(t *testing.T) {
	idFile, recipient := keygen(t)
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  username: admin-user-7\n  password: s3cr3t-pa55\n"
	for _, tc := range []struct {
		name, inputType string
		extra           []string
		plain           string
		secrets         []string // plaintext values that must not appear
		clear           []string // what must stay in clear
		marker          string   // what kustomize-controller's decryptor looks for
		wantPlain       string   // the decrypted output, if not plain
	}{
		{
			name: "yaml Secret, every value", inputType: "yaml", plain: secret,
			secrets: []string{"admin-user-7", "s3cr3t-pa55", "creds"},
			clear:   []string{"apiVersion: ENC[", "kind: ENC[", "name: ENC[", "username: ENC[", "password: ENC[", "unencrypted_suffix: _unencrypted"},
			marker:  "mac: ENC[",
			// sops' YAML store indents by four.
			wantPlain: "apiVersion: v1\nkind: Secret\nmetadata:\n    name: creds\nstringData:\n    username: admin-user-7\n    password: s3cr3t-pa55\n",
		},
		{
			name: "yaml Secret, --encrypted-regex", inputType: "yaml", plain: secret,
			extra:     []string{"--encrypted-regex", "^(data|stringData)$"},
			secrets:   []string{"admin-user-7", "s3cr3t-pa55"},
			clear:     []string{"apiVersion: v1\n", "kind: Secret\n", "name: creds\n", "username: ENC[", "password: ENC[", "encrypted_regex: ^(data|stringData)$"},
			marker:    "mac: ENC[",
			wantPlain: "apiVersion: v1\nkind: Secret\nmetadata:\n    name: creds\nstringData:\n    username: admin-user-7\n    password: s3cr3t-pa55\n",
		},
		{
			name: "json", inputType: "json", plain: `{"token": "tok-123456", "n": 42}`,
			secrets:   []string{"tok-123456"},
			clear:     []string{`"token": "ENC[`, `"n": "ENC[`},
			marker:    `"mac": "ENC[`,
			wantPlain: "{\n\t\"token\": \"tok-123456\",\n\t\"n\": 42\n}\n",
		},
		{
			name: "dotenv", inputType: "dotenv", plain: "DB_USER=dbadmin99\nDB_PASSWORD=p4ssw0rd-xyz\n",
			secrets: []string{"dbadmin99", "p4ssw0rd-xyz"},
			clear: []string{"DB_USER=ENC[", "DB_PASSWORD=ENC[", "sops_age__list_0__map_recipient=" + recipient,
				"sops_lastmodified=", "sops_version=3.13.2", "sops_unencrypted_suffix=_unencrypted"},
			marker: "sops_mac=ENC[",
		},
		{
			name: "binary", inputType: "binary", plain: "line one: opaque-bl0b\nline two\n",
			secrets: []string{"opaque-bl0b", "line two"},
			clear:   []string{`"data": "ENC[`, `"recipient": "` + recipient},
			marker:  `"mac": "ENC[`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"encrypt", "--age", recipient, "--input-type", tc.inputType}, tc.extra...)
			enc := runOK(t, []byte(tc.plain), args...)
			for _, s := range tc.secrets {
				if bytes.Contains(enc, []byte(s)) {
					t.Errorf("plaintext %q in the encrypted file:\n%s", s, enc)
				}
			}
			for _, s := range tc.clear {
				if !bytes.Contains(enc, []byte(s)) {
					t.Errorf("no %q in the encrypted file:\n%s", s, enc)
				}
			}
			if !bytes.Contains(enc, []byte(tc.marker)) {
				t.Errorf("no marker %q in the encrypted file:\n%s", tc.marker, enc)
			}
			if !encValue.Match(enc) {
				t.Errorf("no ENC[AES256_GCM,...] value in the encrypted file:\n%s", enc)
			}
			got := runOK(t, enc, "decrypt", "--identity-file", idFile, "--input-type", tc.inputType)
			want := tc.wantPlain
			if want == "" {
				want = tc.plain
			}
			if string(got) != want {
				t.Errorf("decrypted:\n%q\nwant:\n%q", got, want)
			}
		})
	}
}

func TestDecryptRefuses(t *testing.T) {
	idFile, recipient := keygen(t)
	otherID, _ := keygen(t)
	enc := runOK(t, []byte("A=alpha-value\n"), "encrypt", "--age", recipient, "--input-type", "dotenv")

	var out bytes.Buffer
	if err := run([]string{"decrypt", "--identity-file", otherID, "--input-type", "dotenv"}, bytes.NewReader(enc), &out); err == nil {
		t.Errorf("decrypted with another identity: %q", out.String())
	}
	// A value taken from another file (another data key): not decrypted.
	other := runOK(t, []byte("A=beta-value\n"), "encrypt", "--age", recipient, "--input-type", "dotenv")
	swapped := append(bytes.SplitN(other, []byte("\n"), 2)[0], '\n')
	swapped = append(swapped, bytes.SplitN(enc, []byte("\n"), 2)[1]...)
	out.Reset()
	if err := run([]string{"decrypt", "--identity-file", idFile, "--input-type", "dotenv"}, bytes.NewReader(swapped), &out); err == nil {
		t.Errorf("decrypted a value of another file: %q", out.String())
	}
	// lastmodified is the MAC's additional data: changing it fails the MAC check.
	lm := regexp.MustCompile(`sops_lastmodified=[^\n]+`)
	if !lm.Match(enc) {
		t.Fatalf("no sops_lastmodified in:\n%s", enc)
	}
	tampered := lm.ReplaceAll(enc, []byte("sops_lastmodified=2000-01-01T00:00:00Z"))
	out.Reset()
	if err := run([]string{"decrypt", "--identity-file", idFile, "--input-type", "dotenv"}, bytes.NewReader(tampered), &out); err == nil ||
		!strings.Contains(err.Error(), "MAC") {
		t.Errorf("decrypt with lastmodified changed: %v (output %q), want a MAC error", err, out.String())
	}
	// An empty identity file must not fall back to SOPS_AGE_KEY*.
	empty := filepath.Join(t.TempDir(), "empty.agekey")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"decrypt", "--identity-file", empty, "--input-type", "dotenv"}, bytes.NewReader(enc), &out); err == nil ||
		!strings.Contains(err.Error(), "no age identity") {
		t.Errorf("empty identity file: %v", err)
	}
}

func TestEncryptRefuses(t *testing.T) {
	_, recipient := keygen(t)
	for _, tc := range []struct {
		name  string
		args  []string
		input string
	}{
		{"unknown type", []string{"--input-type", "toml"}, "a = 1\n"},
		{"no type", nil, "A=1\n"},
		{"regex with binary", []string{"--input-type", "binary", "--encrypted-regex", "x"}, "x"},
		{"already encrypted", []string{"--input-type", "yaml"}, "a: 1\nsops: {}\n"},
		{"bad recipient", []string{"--input-type", "yaml", "--age", "age1nope"}, "a: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"encrypt", "--age", recipient}, tc.args...)
			var out bytes.Buffer
			if err := run(args, strings.NewReader(tc.input), &out); err == nil {
				t.Errorf("sopsenc %v succeeded: %q", args, out.String())
			}
		})
	}
}
