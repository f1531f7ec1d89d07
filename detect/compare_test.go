package detect

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Helpers of the migration tests (compare, adoption, identity), prefixed mig.

var migFP = model.NewFingerprinterWithKey([]byte("migration-test-key"))

var migNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func migMeta(ns, name string) model.ObjectMeta {
	return model.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("mig-" + ns + "-" + name)}
}

// migSecret builds a Secret record from values, fingerprinted the way the
// transform does.
func migSecret(ns, name string, kv ...string) *model.Secret {
	s := &model.Secret{ObjectMeta: migMeta(ns, name), Type: "Opaque", Keys: model.KeySet{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Keys.Set(kv[i], migFP.Key([]byte(kv[i+1])))
	}
	return s
}

func migAnnotate(m *model.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

func migES(ns, name, target string) *model.ExternalSecret {
	return &model.ExternalSecret{ObjectMeta: migMeta(ns, name), Target: target, CreationPolicy: "Owner",
		DeletionPolicy: "Retain", StoreKind: "SecretStore", StoreName: "vault",
		Ready: model.Condition{Status: "True", Reason: "SecretSynced"}}
}

func migAvail(rs ...model.Resource) model.Availability {
	a := model.Availability{}
	if len(rs) == 0 {
		rs = model.AllResources
	}
	for _, r := range rs {
		a[r] = true
	}
	return a
}

type migWorld struct {
	secrets []*model.Secret
	es      []*model.ExternalSecret
	stores  []*model.SecretStore
	sas     []*model.ServiceAccount
	pods    []*model.Pod
}

func (w migWorld) store() *model.Store {
	s := model.NewStore(nil)
	for _, x := range w.secrets {
		s.UpsertSecret(x, migNow)
	}
	for _, x := range w.es {
		s.UpsertExternalSecret(x)
	}
	for _, x := range w.stores {
		s.UpsertStore(x)
	}
	for _, x := range w.sas {
		s.UpsertServiceAccount(x)
	}
	for _, x := range w.pods {
		s.UpsertPod(x)
	}
	return s
}

func TestCompareKeys(t *testing.T) {
	live := migSecret("a", "live",
		"same", "v1",
		"nl", "token",
		"crlf", "line1\r\nline2",
		"space", " padded ",
		"diff", "aaaa",
		"b64", "hello",
		"onlylive", "x",
		"empty", "",
		"bin", "\x00\x01\xff")
	store := migSecret("a", "store",
		"same", "v1",
		"nl", "token\n",
		"crlf", "line1\nline2",
		"space", "padded",
		"diff", "bbbbb",
		"b64", "aGVsbG8=",
		"onlystore", "y",
		"empty", "",
		"bin", "\x00\x01\xfe")
	got := CompareKeys(live.Keys, store.Keys)
	want := []KeyVerdict{
		{Key: "b64", Verdict: VerdictMismatch, LiveLen: 5, StoreLen: 8}, // base64: not knowable from fingerprints
		{Key: "bin", Verdict: VerdictMismatch, LiveLen: 3, StoreLen: 3},
		{Key: "crlf", Verdict: VerdictMismatch, Hint: HintWhitespace, LiveLen: 12, StoreLen: 11},
		{Key: "diff", Verdict: VerdictMismatch, LiveLen: 4, StoreLen: 5},
		{Key: "empty", Verdict: VerdictMatch},
		{Key: "nl", Verdict: VerdictMismatch, Hint: HintWhitespace, LiveLen: 5, StoreLen: 6},
		{Key: "onlylive", Verdict: VerdictMissingFromStore, LiveLen: 1},
		{Key: "onlystore", Verdict: VerdictOnlyInStore, StoreLen: 1},
		{Key: "same", Verdict: VerdictMatch, LiveLen: 2, StoreLen: 2},
		{Key: "space", Verdict: VerdictMismatch, Hint: HintWhitespace, LiveLen: 8, StoreLen: 6},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestComparePairs(t *testing.T) {
	live := migSecret("m", "db", "user", "app", "password", "pw\n", "legacy", "x")
	migAnnotate(&live.ObjectMeta, model.AnnCompareWith, "db-check")
	check := migSecret("m", "db", "user", "app", "password", "pw", "extra", "y")
	check.Name = "db-check"
	// A matching pair declared on an ExternalSecret; ESO copied the annotation
	// onto its target, which must not make a second pair.
	good := migSecret("m", "api", "k", "v")
	goodCheck := migSecret("m", "api-check", "k", "v")
	migAnnotate(&goodCheck.ObjectMeta, model.AnnCompareWith, "api")
	esCheck := migES("m", "api-check", "api-check")
	migAnnotate(&esCheck.ObjectMeta, model.AnnCompareWith, "api")
	// A pair whose other side does not exist yet.
	lonely := migSecret("m", "lonely", "k", "v")
	migAnnotate(&lonely.ObjectMeta, model.AnnCompareWith, "lonely-check")
	// Self-reference and other namespaces are ignored / kept apart.
	self := migSecret("m", "self", "k", "v")
	migAnnotate(&self.ObjectMeta, model.AnnCompareWith, "self")

	w := migWorld{secrets: []*model.Secret{live, check, good, goodCheck, lonely, self}, es: []*model.ExternalSecret{esCheck}}
	var got []ComparePair
	w.store().Read(func(v model.View) { got = ComparePairs(v, migAvail()) })
	want := []ComparePair{
		{Namespace: "m", Secret: "api-check", CompareWith: "api", Live: "api", Store: "api-check", Ready: true},
		{Namespace: "m", Secret: "db", CompareWith: "db-check", Live: "db", Store: "db-check", Keys: []KeyVerdict{
			{Key: "extra", Verdict: VerdictOnlyInStore, StoreLen: 1},
			{Key: "legacy", Verdict: VerdictMissingFromStore, LiveLen: 1},
			{Key: "password", Verdict: VerdictMismatch, Hint: HintWhitespace, LiveLen: 3, StoreLen: 2},
		}},
		{Namespace: "m", Secret: "lonely", CompareWith: "lonely-check", Live: "lonely", Store: "lonely-check",
			Keys: []KeyVerdict{{Verdict: VerdictStoreAbsent}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}

	// Without ExternalSecrets the ES annotation is not read, but the copy on
	// the target still declares the pair; its direction then falls back to
	// "annotated is live".
	w.store().Read(func(v model.View) { got = ComparePairs(v, migAvail(model.ResSecrets)) })
	if len(got) != 3 || got[0].Secret != "api-check" || got[0].Live != "api-check" || !got[0].Ready {
		t.Fatalf("without ESO: %+v", got)
	}
	// Without Secrets, nothing.
	w.store().Read(func(v model.View) { got = ComparePairs(v, migAvail(model.ResExternalSecrets)) })
	if got != nil {
		t.Fatalf("without Secrets: %+v", got)
	}
}

func TestComparePairsLiveAbsent(t *testing.T) {
	es := migES("m", "seed", "seed-check")
	migAnnotate(&es.ObjectMeta, model.AnnCompareWith, "gone")
	w := migWorld{secrets: []*model.Secret{migSecret("m", "seed-check", "k", "v")}, es: []*model.ExternalSecret{es}}
	var got []ComparePair
	w.store().Read(func(v model.View) { got = ComparePairs(v, migAvail()) })
	want := []ComparePair{{Namespace: "m", Secret: "seed-check", CompareWith: "gone", Live: "gone", Store: "seed-check",
		Keys: []KeyVerdict{{Verdict: VerdictLiveAbsent}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}
