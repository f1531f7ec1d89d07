package flux

import (
	"sync"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
)

// sopsKeys is an age key pair for the SOPS layout: the recipient encrypts
// files with the real sops library (the version kustomize-controller runs),
// the identity goes into the decryption Secret kustomize-controller reads.
type sopsKeys struct{ identity, recipient string }

var (
	newSOPSKeysOnce sopsKeys
	sopsOnce        sync.Once
)

func newSOPSKeys(t *testing.T) *sopsKeys {
	sopsOnce.Do(func() {
		newSOPSKeysOnce.identity, newSOPSKeysOnce.recipient = gitops.SOPSKeygen(t)
	})
	return &newSOPSKeysOnce
}

// layout is the SOPS layout: an encrypted Secret manifest (values encrypted,
// encrypted_regex ^(data|stringData)$ as Flux's guide sets it: names in
// clear) and an encrypted env file two secretGenerators read, one with a
// hash suffix (its name depends on the decrypted content: undetermined for
// driftwatch), one without (determined; its keys are the env file's, without
// the sops_* metadata lines decryption removes).
func (k *sopsKeys) layout(t *testing.T) layout {
	manifest := gitops.SOPSEncryptRegex(t, k.recipient, "yaml", "^(data|stringData)$",
		[]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: enc\nstringData:\n  API_KEY: sops-e2e-api-key\n  DB_HOST: sops-e2e-db-host\n"))
	env := gitops.SOPSEncrypt(t, k.recipient, "dotenv", []byte("DB_USER=sops-e2e-user\nDB_PASS=sops-e2e-pass\n"))
	return layout{name: "sops", path: "sops", files: map[string]string{
		"sops/kustomization.yaml": "resources: [enc-secret.yaml]\nsecretGenerator:\n- name: sops-hashed\n  envs: [db.enc.env]\n" +
			"- name: sops-plain\n  envs: [db.enc.env]\n  options: {disableNameSuffixHash: true}\n",
		"sops/enc-secret.yaml": string(manifest),
		"sops/db.enc.env":      string(env),
	}, spec: "  decryption:\n    provider: sops\n    secretRef: {name: sops-age}\n",
		undetermined: []string{"Secret/sops-hashed-"}}
}
