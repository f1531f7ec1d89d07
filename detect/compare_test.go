package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestCompareKeys(t *testing.T) {
	live := mt.SecretValues("a", "live",
		"same", "v1",
		"nl", "token",
		"crlf", "line1\r\nline2",
		"space", " padded ",
		"diff", "aaaa",
		"b64", "hello",
		"onlylive", "x",
		"empty", "",
		"bin", "\x00\x01\xff")
	store := mt.SecretValues("a", "store",
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
	live := mt.SecretValues("m", "db", "user", "app", "password", "pw\n", "legacy", "x")
	mt.Annotate(live, model.AnnCompareWith, "db-check")
	check := mt.SecretValues("m", "db", "user", "app", "password", "pw", "extra", "y")
	check.Name = "db-check"
	// A matching pair declared on an ExternalSecret; ESO copied the annotation
	// onto its target, which must not make a second pair.
	good := mt.SecretValues("m", "api", "k", "v")
	goodCheck := mt.SecretValues("m", "api-check", "k", "v")
	mt.Annotate(goodCheck, model.AnnCompareWith, "api")
	esCheck := mt.ES("m", "api-check", mt.ESTarget("api-check"))
	mt.Annotate(esCheck, model.AnnCompareWith, "api")
	// A pair whose other side does not exist yet.
	lonely := mt.SecretValues("m", "lonely", "k", "v")
	mt.Annotate(lonely, model.AnnCompareWith, "lonely-check")
	// Self-reference and other namespaces are ignored / kept apart.
	self := mt.SecretValues("m", "self", "k", "v")
	mt.Annotate(self, model.AnnCompareWith, "self")

	w := mt.NewStore(t, []*model.Secret{live, check, good, goodCheck, lonely, self}, []*model.ExternalSecret{esCheck})
	var got []ComparePair
	w.Read(func(v model.View) { got = ComparePairs(v, mt.All()) })
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
	w.Read(func(v model.View) { got = ComparePairs(v, mt.Only(model.ResSecrets)) })
	if len(got) != 3 || got[0].Secret != "api-check" || got[0].Live != "api-check" || !got[0].Ready {
		t.Fatalf("without ESO: %+v", got)
	}
	// Without Secrets, nothing.
	w.Read(func(v model.View) { got = ComparePairs(v, mt.Only(model.ResExternalSecrets)) })
	if got != nil {
		t.Fatalf("without Secrets: %+v", got)
	}
}

func TestComparePairsLiveAbsent(t *testing.T) {
	es := mt.ES("m", "seed", mt.ESTarget("seed-check"))
	mt.Annotate(es, model.AnnCompareWith, "gone")
	w := mt.NewStore(t, []*model.Secret{mt.SecretValues("m", "seed-check", "k", "v")}, []*model.ExternalSecret{es})
	var got []ComparePair
	w.Read(func(v model.View) { got = ComparePairs(v, mt.All()) })
	want := []ComparePair{{Namespace: "m", Secret: "seed-check", CompareWith: "gone", Live: "gone", Store: "seed-check",
		Keys: []KeyVerdict{{Verdict: VerdictLiveAbsent}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}
