package detect

import (
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
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
			objs: []any{mt.Secret(ns, "db", "A", "B", "extra"), mt.ES(ns, "db", mt.ESData("A", "B"))},
		},
		{
			name: "Ready=True, target absent: value is the expected key count",
			objs: []any{mt.ES(ns, "db", mt.ESData("A", "B", "C"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 3, "SecretSynced")},
		},
		{
			name: "Ready=True, target absent, no fixed keys (dataFrom.find matched nothing): at least 1",
			objs: []any{mt.ES(ns, "bulk", mt.ESDataFrom(1, 1))},
			want: []ReadyButShort{wantShort(ns, "bulk", "bulk", ShortAbsent, 1, "SecretSynced")},
		},
		{
			name: "being deleted (a finalizer, a foreground delete): nothing",
			objs: []any{mt.ES(ns, "db", mt.ESData("A", "B", "C"), func(e *model.ExternalSecret) { e.Deleting = true })},
		},
		{
			name: "Ready=True, target empty",
			objs: []any{mt.Secret(ns, "db"), mt.ES(ns, "db", mt.ESData("A", "B"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortEmpty, 2, "SecretSynced")},
		},
		{
			name: "Ready=True, target empty, dataFrom only: 1",
			objs: []any{mt.Secret(ns, "bulk"), mt.ES(ns, "bulk", mt.ESDataFrom(1, 0))},
			want: []ReadyButShort{wantShort(ns, "bulk", "bulk", ShortEmpty, 1, "SecretSynced")},
		},
		{
			name: "Ready=True, keys missing (deletionPolicy Delete skipped one)",
			objs: []any{mt.Secret(ns, "creds", "A"), mt.ES(ns, "db", mt.ESTarget("creds"), mt.ESData("A", "B", "C"), func(e *model.ExternalSecret) { e.DeletionPolicy = "Delete" })},
			want: []ReadyButShort{wantShort(ns, "db", "creds", ShortMissingKeys, 2, "SecretSynced")},
		},
		{
			name: "template default policy: only template keys count",
			objs: []any{mt.Secret(ns, "db", "DSN"), mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("", "DSN"))},
		},
		{
			name: "template Merge: data keys count too",
			objs: []any{mt.Secret(ns, "db", "DSN", "user"), mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("Merge", "DSN"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortMissingKeys, 1, "SecretSynced")},
		},
		{
			name: "annotation keys of the ExternalSecret count, once",
			objs: []any{mt.Secret(ns, "db", "A"), mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESExpectKeys("B", "C"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortMissingKeys, 2, "SecretSynced")},
		},
		{
			name: "Ready=True reason SecretMissing: Merge with no target",
			objs: []any{mt.ES(ns, "merge", mt.ESCreation("Merge"), mt.ESData("A"), mt.ESReady("True", "SecretMissing"))},
			want: []ReadyButShort{wantShort(ns, "merge", "merge", ShortAbsent, 1, "SecretMissing")},
		},
		{
			// ESO v0.20.4 with creationPolicy None writes nothing and reports
			// Ready=True SecretSynced (seen on the real controller): Ready says
			// nothing about the target, absent or short.
			name: "creationPolicy None: ESO writes nothing, so neither an absent nor a short target is reported",
			objs: []any{mt.ES(ns, "none", mt.ESCreation("None"), mt.ESTarget("external"), mt.ESData("A", "B")),
				mt.ES(ns, "none2", mt.ESCreation("None"), mt.ESTarget("other"), mt.ESData("A", "B")), mt.Secret(ns, "other", "A")},
		},
		{
			name: "v1beta1 behaves the same",
			objs: []any{mt.Secret(ns, "old", "A"), mt.ES(ns, "old", mt.ESAPIVersion("external-secrets.io/v1beta1"), mt.ESData("A", "B"))},
			want: []ReadyButShort{wantShort(ns, "old", "old", ShortMissingKeys, 1, "SecretSynced")},
		},
		{
			name: "Ready=False, Unknown, absent condition or decode error: not reported here",
			objs: []any{
				mt.ES(ns, "f", mt.ESData("A"), mt.ESReady("False", "SecretSyncedError")),
				mt.ES(ns, "u", mt.ESData("A"), mt.ESReady("Unknown", "")),
				mt.ES(ns, "n", mt.ESData("A"), mt.ESReady("", "")),
				mt.ES(ns, "d", mt.ESData("A"), mt.ESDecodeErr("decode: bad")),
			},
		},
		{
			name: "same target name in another namespace does not count",
			objs: []any{mt.Secret("other", "db", "A"), mt.ES(ns, "db", mt.ESData("A"))},
			want: []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 1, "SecretSynced")},
		},
		{
			name: "several, sorted by namespace and name",
			objs: []any{mt.ES("b", "z", mt.ESData("A")), mt.ES("a", "y", mt.ESData("A")), mt.Secret("a", "x"), mt.ES("a", "x", mt.ESData("A"))},
			want: []ReadyButShort{
				wantShort("a", "x", "x", ShortEmpty, 1, "SecretSynced"),
				wantShort("a", "y", "y", ShortAbsent, 1, "SecretSynced"),
				wantShort("b", "z", "z", ShortAbsent, 1, "SecretSynced"),
			},
		},
		{
			name:  "Secrets not available: nothing",
			objs:  []any{mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResSecrets),
		},
		{
			name:  "ExternalSecrets not available: nothing",
			objs:  []any{mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResExternalSecrets),
		},
		{
			name:  "pods not available does not matter",
			objs:  []any{mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResPods),
			want:  []ReadyButShort{wantShort(ns, "db", "db", ShortAbsent, 1, "SecretSynced")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = mt.All()
			}
			s := mt.NewStore(t, tc.objs...)
			got := mt.Read(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, avail) })
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
	s := mt.NewStore(t, mt.Secret("app", "db", "B"), mt.ES("app", "db", mt.ESData("C", "B", "A")))
	got := mt.Read(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, mt.All()) })
	if len(got) != 1 || strings.Join(got[0].MissingKeys, ",") != "A,C" || strings.Join(got[0].Expected, ",") != "A,B,C" {
		t.Fatalf("got %+v", got)
	}
}

// The Secret appearing later (ESO notices Merge targets only on the next refresh)
// clears the finding as soon as the model sees it.
func TestReadyButShortClears(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.ES(ns, "m", mt.ESCreation("Merge"), mt.ESData("A"), mt.ESReady("True", "SecretMissing")))
	run := func() []ReadyButShort {
		return mt.Read(s, func(v model.View) []ReadyButShort { return ReadyButShortES(v, mt.All()) })
	}
	checkSlice(t, "before", run(), []ReadyButShort{wantShort(ns, "m", "m", ShortAbsent, 1, "SecretMissing")})
	s.UpsertSecret(mt.Secret(ns, "m"), mt.T0)
	checkSlice(t, "empty", run(), []ReadyButShort{wantShort(ns, "m", "m", ShortEmpty, 1, "SecretMissing")})
	s.UpsertSecret(mt.Secret(ns, "m", "A"), mt.T0.Add(1))
	checkSlice(t, "after", run(), nil)
}
