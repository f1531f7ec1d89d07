package build

// SOPS. driftwatch never decrypts. kustomize-controller decrypts, when the
// Kustomization sets spec.decryption.provider sops, the files its
// kustomizations' secretGenerators and patches read (decryptor.DecryptSources,
// before the build) and the encrypted objects the build produces
// (DecryptResource, after it). SOPS encrypts values only: the key names of an
// encrypted YAML, JSON, dotenv or INI file are in clear, so the keys of an
// encrypted Secret, or of a Secret generated from an encrypted env file, are
// known. What is not known is a generated name whose hash suffix is computed
// from the decrypted content. The build runs on stand-ins of the encrypted
// files (their SOPS metadata removed as decryption removes it, the
// ciphertexts left in place) twice, with two different stand-ins: a name
// that moves between the two builds is hashed from encrypted content and is
// undetermined.

import (
	"bytes"
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// The byte markers kustomize-controller's decryptor looks for
// (sopsFormatToMarkerBytes, internal/decryptor v1.9.6).
var sopsMarkers = [][]byte{[]byte(`"mac": "ENC[`), []byte("sops_mac=ENC["), []byte("[sops]"), []byte("mac: ENC[")}

func isSOPS(b []byte) bool {
	for _, m := range sopsMarkers {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// decryptsSOPS reports whether the Kustomization decrypts with SOPS.
func decryptsSOPS(spec map[string]any) bool {
	d, _ := spec["decryption"].(map[string]any)
	p, _ := d["provider"].(string)
	return p == "sops"
}

// hasSOPSSources reports whether the artifact holds a SOPS-encrypted file
// that is not a Kubernetes manifest of its own (an env file, a file a
// generator reads, an encrypted patch).
func hasSOPSSources(files FS) bool {
	for p, b := range files {
		if isSOPS(b) && !(isManifestExt(p) && looksLikeObject(b)) {
			return true
		}
	}
	return false
}

func isManifestExt(p string) bool {
	switch path.Ext(p) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// looksLikeObject: a document with apiVersion and kind (an encrypted Secret
// manifest, which the build reads as a resource and the controller decrypts
// after it, keeping its names).
func looksLikeObject(b []byte) bool {
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	return yaml.Unmarshal(b, &m) == nil && m.APIVersion != "" && m.Kind != ""
}

// standInVariant returns the stand-in of an encrypted file (ok false: the
// file is used as it is).
type standInVariant func(path string, b []byte) ([]byte, bool)

var (
	standIn0 standInVariant = func(p string, b []byte) ([]byte, bool) { return standIn(p, b, "") }
	standIn1 standInVariant = func(p string, b []byte) ([]byte, bool) { return standIn(p, b, "driftwatch-variant:") }
)

// standIn is the file as the build would see it once decrypted, values aside:
// for dotenv files the sops_* metadata lines are dropped (decryption writes
// the plain env file back); for YAML and JSON the top-level sops stanza is
// dropped. mark is put into every ciphertext so that two variants differ
// wherever a value does.
func standIn(p string, b []byte, mark string) ([]byte, bool) {
	if !isSOPS(b) || (isManifestExt(p) && looksLikeObject(b)) {
		return nil, false
	}
	out := b
	switch {
	case bytes.Contains(b, []byte("sops_mac=ENC[")):
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "sops_") {
				lines = append(lines, l)
			}
		}
		out = []byte(strings.Join(lines, "\n"))
	case isManifestExt(p):
		var m map[string]any
		if yaml.Unmarshal(b, &m) == nil {
			if _, ok := m["sops"]; ok {
				delete(m, "sops")
				if y, err := yaml.Marshal(m); err == nil {
					out = y
				}
			}
		}
	}
	if mark != "" {
		out = bytes.ReplaceAll(out, []byte("ENC["), []byte("ENC["+mark))
	}
	return out, true
}
