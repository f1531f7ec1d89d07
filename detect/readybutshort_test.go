package detect

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

func wantShort(ns, esName, sec, reason string, n int, readyReason string) ReadyButShort {
	return ReadyButShort{Namespace: ns, ExternalSecret: esName, Secret: sec, Reason: reason, Missing: n, ReadyReason: readyReason}
}

func TestReadyButShort(t *testing.T) {
	const ns = "app"
	tests := []struct {
		name  string
		objs  []any
		avail model.Availability
		want  []ReadyButShort
	}{
		{
			name: "Ready and complete: nothing",
			objs: []any{secret(ns, "db", "A", "B", "extra"), es(ns, "db", esData("A", "B"))},
		},
		{
			name: "Ready=True, target absent: value is the expected key count",
			objs: []any{es(ns, "db", esData("A", "B", "C"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 3, "SecretSynced")},
		},
		{
			name: "Ready=True, target absent, no fixed keys (dataFrom.find matched nothing): at least 1",
			objs: []any{es(ns, "bulk", esDataFrom(1, 1))},
			want: []ReadyButShort{wantShort(ns, "bulk", "bulk", ShortAbsent, 1, "SecretSynced")},
		},
		{
			name: "Ready=True, target empty",
			objs: []any{secret(ns, "db"), es(ns, "db", esData("A", "B"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortEmpty, 2, "SecretSynced")},
		},
		{
			name: "Ready=True, target empty, dataFrom only: 1",
			objs: []any{secret(ns, "bulk"), es(ns, "bulk", esDataFrom(1, 0))},
			want: []ReadyButShort{wantShort(ns, "bulk", "bulk", ShortEmpty, 1, "SecretSynced")},
		},
		{
			name: "Ready=True, keys missing (deletionPolicy Delete skipped one)",
			objs: []any{secret(ns, "creds", "A"), es(ns, "db", esTarget("creds"), esData("A", "B", "C"), func(e *model.ExternalSecret) { e.DeletionPolicy = "Delete" })},
			want: []ReadyButShort{wantShort(ns, "db", "creds", ShortMissingKeys, 2, "SecretSynced")},
		},
		{
			name: "template default policy: only template keys count",
			objs: []any{secret(ns, "db", "DSN"), es(ns, "db", esData("user", "pass"), esTemplate("", "DSN"))},
		},
		{
			name: "template Merge: data keys count too",
			objs: []any{secret(ns, "db", "DSN", "user"), es(ns, "db", esData("user", "pass"), esTemplate("Merge", "DSN"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortMissingKeys, 1, "SecretSynced")},
		},
		{
			name: "annotation keys of the ExternalSecret count, once",
			objs: []any{secret(ns, "db", "A"), es(ns, "db", esData("A", "B"), esAnnotated("B", "C"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortMissingKeys, 2, "SecretSynced")},
		},
		{
			name: "Ready=True reason SecretMissing: Merge with no target",
			objs: []any{es(ns, "merge", esCreation("Merge"), esData("A"), esReady("True", "SecretMissing"))},
			want: []ReadyButShort{wantShort(ns, "merge", "merge", ShortAbsent, 1, "SecretMissing")},
		},
		{
			// ESO v0.20.4 with creationPolicy None writes nothing and reports
			// Ready=True SecretSynced (seen on the real controller): Ready says
			// nothing about the target, absent or short.
			name: "creationPolicy None: ESO writes nothing, so neither an absent nor a short target is reported",
			objs: []any{es(ns, "none", esCreation("None"), esTarget("external"), esData("A", "B")),
				es(ns, "none2", esCreation("None"), esTarget("other"), esData("A", "B")), secret(ns, "other", "A")},
		},
		{
			name: "v1beta1 behaves the same",
			objs: []any{secret(ns, "old", "A"), es(ns, "old", esAPIVersion("external-secrets.io/v1beta1"), esData("A", "B"))},
			want: []ReadyButShort{wantShort(ns, "old", "old", ShortMissingKeys, 1, "SecretSynced")},
		},
		{
			name: "Ready=False, Unknown, absent condition or decode error: not reported here",
			objs: []any{
				es(ns, "f", esData("A"), esReady("False", "SecretSyncedError")),
				es(ns, "u", esData("A"), esReady("Unknown", "")),
				es(ns, "n", esData("A"), esReady("", "")),
				es(ns, "d", esData("A"), esDecodeErr("decode: bad")),
			},
		},
		{
			name: "same target name in another namespace does not count",
			objs: []any{secret("other", "db", "A"), es(ns, "db", esData("A"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 1, "SecretSynced")},
		},
		{
			name: "several, sorted by namespace and name",
			objs: []any{es("b", "z", esData("A")), es("a", "y", esData("A")), secret("a", "x"), es("a", "x", esData("A"))},
			want: []ReadyButShort{
				wantShort("a", "x", "x", ShortEmpty, 1, "SecretSynced"),
				wantShort("a", "y", "y", ShortAbsent, 1, "SecretSynced"),
				wantShort("b", "z", "z", ShortAbsent, 1, "SecretSynced"),
			},
		},
		{
			name:  "Secrets not available: nothing",
			objs:  []any{es(ns, "db", esData("A"))},
			avail: allBut(model.ResSecrets),
		},
		{
			name:  "ExternalSecrets not available: nothing",
			objs:  []any{es(ns, "db", esData("A"))},
			avail: allBut(model.ResExternalSecrets),
		},
		{
			name:  "pods not available does not matter",
			objs:  []any{es(ns, "db", esData("A"))},
			avail: allBut(model.ResPods),
			want:  []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 1, "SecretSynced")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = availAll()
			}
			s := newStore(t, tc.objs...)
			got := readView(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, avail) })
			for i := range got {
				if g := got[i]; g.Reason == ShortMissingKeys && (len(g.MissingKeys) != g.Missing || len(g.Expected) < g.Missing) {
					t.Errorf("%s: %d missing but keys %v of %v", g.ExternalSecret, g.Missing, g.MissingKeys, g.Expected)
				}
				got[i].Expected, got[i].MissingKeys = nil, nil // checked above and in TestReadyButShortKeys
			}
			checkSlice(t, "ReadyButShortES", got, tc.want)
		})
	}
}

// The evidence names the keys the Secret lacks, sorted.
func TestReadyButShortKeys(t *testing.T) {
	s := newStore(t, secret("app", "db", "B"), es("app", "db", esData("C", "B", "A")))
	got := readView(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, availAll()) })
	if len(got) != 1 || strings.Join(got[0].MissingKeys, ",") != "A,C" || strings.Join(got[0].Expected, ",") != "A,B,C" {
		t.Fatalf("got %+v", got)
	}
}

// The Secret appearing later (ESO notices Merge targets only on the next refresh)
// clears the finding as soon as the model sees it.
func TestReadyButShortClears(t *testing.T) {
	const ns = "app"
	s := newStore(t, es(ns, "m", esCreation("Merge"), esData("A"), esReady("True", "SecretMissing")))
	run := func() []ReadyButShort {
		return readView(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, availAll()) })
	}
	checkSlice(t, "before", run(), []ReadyButShort{wantShort(ns, "m", "m", ShortAbsent, 1, "SecretMissing")})
	s.UpsertSecret(secret(ns, "m"), fxT0)
	checkSlice(t, "empty", run(), []ReadyButShort{wantShort(ns, "m", "m", ShortEmpty, 1, "SecretMissing")})
	s.UpsertSecret(secret(ns, "m", "A"), fxT0.Add(1))
	checkSlice(t, "after", run(), nil)
}
