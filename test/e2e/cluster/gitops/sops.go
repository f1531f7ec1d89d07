package gitops

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// SOPSEncBin is test/tools/flux/sopsenc as test/tools/build.sh builds it: SOPS
// encryption with age from the sops v3.13.2 and age v1.3.1 packages the
// kustomize-controller of the stack decrypts with.
const SOPSEncBin = "sopsenc"

// SOPSDecryptionSecretKey is the Secret key SOPSDecryptionSecretYAML stores the
// age identity under: kustomize-controller v1.9.6 imports every value of the
// decryption Secret whose key has the extension DecryptionAgeExt (".agekey")
// as age identities (internal/decryptor/decryptor.go, Decryptor.ImportKeys:
// `case DecryptionAgeExt: d.ageIdentities.Import(string(value))`).
const SOPSDecryptionSecretKey = "identity.agekey"

// SOPSKeygen makes a new age key pair with sopsenc: the identity
// (AGE-SECRET-KEY-1...) and its recipient (age1...).
func SOPSKeygen(t testing.TB) (identity, recipient string) {
	t.Helper()
	out := runSOPSEnc(t, nil, "keygen")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "AGE-SECRET-KEY-1") || !strings.HasPrefix(lines[1], "age1") {
		t.Fatalf("%s keygen printed %d line(s), want an age identity and its recipient", SOPSEncBin, len(lines))
	}
	return lines[0], lines[1]
}

// SOPSEncrypt encrypts plain for the age recipient as `sops --encrypt --age
// recipient --input-type inputType` does (the output in the same format):
// inputType is yaml, json, dotenv or binary. Every value is encrypted but
// those of keys ending in _unencrypted; for a Secret manifest Flux can build,
// use SOPSEncryptRegex with "^(data|stringData)$".
func SOPSEncrypt(t testing.TB, recipient, inputType string, plain []byte) []byte {
	t.Helper()
	return runSOPSEnc(t, plain, "encrypt", "--age", recipient, "--input-type", inputType)
}

// SOPSEncryptRegex is SOPSEncrypt with --encrypted-regex: only the values under
// keys matching encryptedRegex are encrypted (yaml, json, dotenv).
func SOPSEncryptRegex(t testing.TB, recipient, inputType, encryptedRegex string, plain []byte) []byte {
	t.Helper()
	return runSOPSEnc(t, plain, "encrypt", "--age", recipient, "--input-type", inputType, "--encrypted-regex", encryptedRegex)
}

func runSOPSEnc(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	bin, err := tools.Tool(SOPSEncBin)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", SOPSEncBin, args[0], err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// SOPSDecryptionSecretYAML renders a Secret named name holding the age identity
// under SOPSDecryptionSecretKey, for a Kustomization's
// `decryption: {provider: sops, secretRef: {name: NAME}}` (the Secret in the
// Kustomization's namespace).
func SOPSDecryptionSecretYAML(name, identity string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %s}
type: Opaque
stringData:
  %s: %s
`, name, SOPSDecryptionSecretKey, strconv.Quote(identity))
}
