package detect

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// Ready-but-short reasons.
const (
	ShortMissingKeys = "missing_keys"
	ShortEmpty       = "empty"
	ShortAbsent      = "absent"
)

// ReadyButShort is an ExternalSecret that reports Ready=True while the Secret it
// writes is absent, empty, or lacks keys it should hold.
type ReadyButShort struct {
	Namespace      string
	ExternalSecret string
	Secret         string
	Reason         string
	// Missing is the number of expected keys the Secret lacks (at least 1).
	Missing int
	// ReadyReason is the condition's reason (SecretSynced, SecretMissing, ...).
	ReadyReason string
}

// ReadyButShortES finds ExternalSecrets whose Ready=True is not backed by their Secret.
func ReadyButShortES(v model.View, avail model.Availability) []ReadyButShort {
	if !avail.All(model.ResSecrets, model.ResExternalSecrets) {
		return nil
	}
	var out []ReadyButShort
	for _, e := range v.ExternalSecrets() {
		if e.DecodeErr != "" || e.Ready.Status != "True" {
			continue
		}
		expected := unionKeys(ESExpectedKeys(e), e.ExpectedKeys)
		atLeastOne := func(n int) int {
			if n < 1 {
				return 1
			}
			return n
		}
		r := ReadyButShort{Namespace: e.Namespace, ExternalSecret: e.Name, Secret: e.Target, ReadyReason: e.Ready.Reason}
		s, ok := v.Secret(e.Namespace, e.Target)
		switch {
		case !ok:
			r.Reason, r.Missing = ShortAbsent, atLeastOne(len(expected))
		case s.Keys.Len() == 0:
			r.Reason, r.Missing = ShortEmpty, atLeastOne(len(expected))
		default:
			n := 0
			for _, k := range expected {
				if _, has := s.Keys.Get(k); !has {
					n++
				}
			}
			if n == 0 {
				continue
			}
			r.Reason, r.Missing = ShortMissingKeys, n
		}
		out = append(out, r)
	}
	return out
}

func unionKeys(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, l := range [][]string{a, b} {
		for _, k := range l {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}
