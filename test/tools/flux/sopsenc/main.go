// Command sopsenc encrypts and decrypts SOPS files with age, built from the
// same sops (v3.13.2) and age (v1.3.1) modules as the kustomize-controller
// the end-to-end tests run, so that what the tests commit to Git is what that
// controller's decryptor (internal/decryptor) reads.
//
//	sopsenc keygen
//	    prints an age identity (AGE-SECRET-KEY-1...) and its recipient (age1...),
//	    one a line.
//	sopsenc encrypt --age RECIPIENT --input-type yaml|json|dotenv|binary [--encrypted-regex RE] < plain > encrypted
//	    what `sops --encrypt --age RECIPIENT --input-type T --output-type T
//	    [--encrypted-regex RE]` does with no .sops.yaml: without a regex,
//	    every value but those of keys ending in _unencrypted is encrypted.
//	sopsenc decrypt --identity-file FILE --input-type yaml|json|dotenv|binary < encrypted > plain
//	    decrypts with the age identities of FILE only (as kustomize-controller
//	    does with the .agekey values of its decryption Secret, not with
//	    SOPS_AGE_KEY* or ~/.config/sops/age/keys.txt), and checks the MAC.
//
// It imports only sops packages kustomize-controller v1.9.6's decryptor
// imports (sops, aes, age, cmd/sops/common, cmd/sops/formats, config,
// keyservice), plus sops/version, which cmd/sops/common imports, and
// filippo.io/age: its build reuses that controller's compiled packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/version"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sopsenc:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  sopsenc keygen
  sopsenc encrypt --age RECIPIENT --input-type yaml|json|dotenv|binary [--encrypted-regex RE] < plain > encrypted
  sopsenc decrypt --identity-file FILE --input-type yaml|json|dotenv|binary < encrypted > plain`

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "keygen":
		if len(args) != 1 {
			return errors.New(usage)
		}
		id, err := age.GenerateX25519Identity()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n%s\n", id, id.Recipient())
		return err
	case "encrypt":
		fs := flag.NewFlagSet("encrypt", flag.ContinueOnError)
		recipient := fs.String("age", "", "age recipient (age1...)")
		inputType := fs.String("input-type", "", "yaml, json, dotenv or binary")
		encRegex := fs.String("encrypted-regex", "", "encrypt only the values of keys matching this regex")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 0 || *recipient == "" {
			return errors.New(usage)
		}
		format, err := parseFormat(*inputType)
		if err != nil {
			return err
		}
		plain, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		out, err := encrypt(plain, format, *recipient, *encRegex)
		if err != nil {
			return err
		}
		_, err = stdout.Write(out)
		return err
	case "decrypt":
		fs := flag.NewFlagSet("decrypt", flag.ContinueOnError)
		idFile := fs.String("identity-file", "", "file of age identities (AGE-SECRET-KEY-1...), one a line")
		inputType := fs.String("input-type", "", "yaml, json, dotenv or binary")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 0 || *idFile == "" {
			return errors.New(usage)
		}
		format, err := parseFormat(*inputType)
		if err != nil {
			return err
		}
		ids, err := os.ReadFile(*idFile)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		out, err := decrypt(data, format, string(ids))
		if err != nil {
			return err
		}
		_, err = stdout.Write(out)
		return err
	}
	return errors.New(usage)
}

// parseFormat accepts the four formats kustomize-controller decrypts in a
// Secret's values or a generator's files (formats.FormatFromString falls back
// to binary on a typo; this does not).
func parseFormat(s string) (formats.Format, error) {
	switch s {
	case "yaml":
		return formats.Yaml, nil
	case "json":
		return formats.Json, nil
	case "dotenv":
		return formats.Dotenv, nil
	case "binary":
		return formats.Binary, nil
	}
	return 0, fmt.Errorf("--input-type must be yaml, json, dotenv or binary, not %q", s)
}

// encrypt follows sops v3.13.2's cmd/sops/encrypt.go (encrypt,
// metadataFromEncryptionConfig, validateFileForEncryption) and the defaults
// of cmd/sops/main.go's getEncryptConfig for a run without .sops.yaml: the
// output store is the input's, one key group holding the age master key.
func encrypt(plain []byte, format formats.Format, recipient, encryptedRegex string) ([]byte, error) {
	store := common.StoreForFormat(format, config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("load plain file: %w", err)
	}
	if len(branches) < 1 {
		return nil, errors.New("empty file: it must contain at least one document")
	}
	if store.HasSopsTopLevelKey(branches[0]) {
		return nil, errors.New("the file has a top-level sops entry: already encrypted?")
	}
	key, err := sopsage.MasterKeyFromRecipient(recipient)
	if err != nil {
		return nil, err
	}
	md := sops.Metadata{
		KeyGroups: []sops.KeyGroup{{key}},
		Version:   version.Version,
	}
	single := false
	if svs, ok := store.(sops.SingleValueStore); ok {
		single = svs.IsSingleValueStore()
	}
	switch {
	case single && encryptedRegex != "":
		// sops warns and ignores it; a test asking for it is mistaken.
		return nil, errors.New("--encrypted-regex makes no sense with binary: its single value is always encrypted")
	case encryptedRegex != "":
		md.EncryptedRegex = encryptedRegex
	case !single:
		md.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	tree := sops.Tree{Branches: branches, Metadata: md}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		return nil, fmt.Errorf("could not generate data key: %v", errs)
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{Tree: &tree, Cipher: aes.NewCipher(), DataKey: dataKey}); err != nil {
		return nil, err
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		return nil, fmt.Errorf("emit encrypted file: %w", err)
	}
	return out, nil
}

// decrypt loads the file as kustomize-controller's SopsDecryptWithFormat
// does, gets the data key from a key service holding only identities (as
// kustomize-controller's internal/sops/keyservice does with the imported
// .agekey values), checks the MAC and emits the plain file in the same format.
func decrypt(data []byte, format formats.Format, identities string) ([]byte, error) {
	var ids sopsage.ParsedIdentities
	if err := ids.Import(identities); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		// An empty list would make sops read SOPS_AGE_KEY* and keys.txt.
		return nil, errors.New("no age identity in the identity file")
	}
	store := common.StoreForFormat(format, config.NewStoresConfig())
	tree, err := store.LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("load encrypted file: %w", err)
	}
	if _, err := common.DecryptTree(common.DecryptTreeOpts{
		Tree:            &tree,
		KeyServices:     []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(identityServer{ids})},
		DecryptionOrder: sops.DefaultDecryptionOrder,
		Cipher:          aes.NewCipher(),
	}); err != nil {
		return nil, err
	}
	out, err := store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("emit plain file: %w", err)
	}
	return out, nil
}

// identityServer is a SOPS key service that decrypts age data keys with its
// identities only.
type identityServer struct{ ids sopsage.ParsedIdentities }

func (s identityServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("sopsenc's decrypt key service does not encrypt")
}

func (s identityServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	k := req.GetKey().GetAgeKey()
	if k == nil {
		return nil, fmt.Errorf("not an age key: %T", req.GetKey().GetKeyType())
	}
	mk := sopsage.MasterKey{Recipient: k.Recipient, EncryptedKey: string(req.GetCiphertext())}
	s.ids.ApplyToMasterKey(&mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}
