package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func wantEmpty(ns, sec, key string, c ...Consumer) EmptyKeyRead {
	r := EmptyKeyRead{Namespace: ns, Secret: sec, Key: key, Consumers: c}
	for _, x := range c {
		r.Pods += x.Pods
	}
	return r
}

func TestSecretKeyEmptyRead(t *testing.T) {
	const ns = "app"
	// db: PASS is empty (stringData: {PASS: ""}), USER holds a value.
	db := func() *model.Secret { return mt.SecretValues(ns, "db", "PASS", "", "USER", "admin") }
	ignoring := func(p *model.Pod) *model.Pod { return mt.Annotate(p, model.AnnIgnore, DetectorSecretKeyEmptyRead) }

	cases := []struct {
		name     string
		objs     []any
		avail    model.Availability
		scope    string
		want     []EmptyKeyRead
		silenced map[string]int
	}{
		// Found.
		{name: "env secretKeyRef of an empty key",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "PASS"))},
			want: []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("p"))}},
		{name: "an optional secretKeyRef of an empty key that exists: the variable is still set to \"\"",
			objs: []any{db(), mt.Pod(ns, "p", mt.OptEnv("db", "PASS"))},
			want: []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("p"))}},
		{name: "secret and projected volume items naming the empty key",
			objs: []any{db(), mt.Pod(ns, "vol", mt.VolItem("db", "PASS")), mt.Pod(ns, "proj", mt.ProjItem("db", "PASS"))},
			want: []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("proj"), barePod("vol"))}},
		{name: "the pods of a Deployment and a bare pod, counted per workload",
			objs: []any{db(), mt.DeployPod(ns, "api", 0, mt.Env("db", "PASS")), mt.DeployPod(ns, "api", 1, mt.Env("db", "PASS")),
				mt.DeployPod(ns, "api", 2, mt.Env("db", "PASS")), mt.Pod(ns, "job", mt.Env("db", "PASS"))},
			want: []EmptyKeyRead{wantEmpty(ns, "db", "PASS", byDeploy("api", 3), barePod("job"))}},
		{name: "a pod reading the key twice (env in two containers, a volume item) counts once",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "PASS"), mt.InContainer(mt.Env("db", "PASS"), "sidecar"), mt.VolItem("db", "PASS"))},
			want: []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("p"))}},
		{name: "several empty keys and Secrets, sorted",
			objs: []any{mt.SecretValues(ns, "z", "K", ""), mt.SecretValues(ns, "a", "Y", "", "X", ""),
				mt.Pod(ns, "p", mt.Env("z", "K"), mt.Env("a", "Y"), mt.Env("a", "X"))},
			want: []EmptyKeyRead{wantEmpty(ns, "a", "X", barePod("p")), wantEmpty(ns, "a", "Y", barePod("p")), wantEmpty(ns, "z", "K", barePod("p"))}},

		// Healthy look-alikes.
		{name: "a key that holds a value",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "USER"), mt.VolItem("db", "USER"))}},
		{name: "a Secret with an empty key that nobody reads",
			objs: []any{db(), mt.Secret(ns, "other", "A"), mt.Pod(ns, "p", mt.Env("other", "A"))}},
		{name: "reads that name no key (envFrom, a whole volume): the application may never use that key",
			objs: []any{db(), mt.Pod(ns, "p", mt.EnvFrom("db"), mt.Use("db", "", model.ViaVolume), mt.Use("db", "", model.ViaProjected))}},
		{name: "an imagePullSecret",
			objs: []any{mt.SecretValues(ns, "regcred", ".dockerconfigjson", ""), mt.Pod(ns, "p", mt.ImagePull("regcred"))}},
		{name: "a volume item no container mounts",
			objs: []any{db(), mt.Pod(ns, "p", mt.InContainer(mt.VolItem("db", "PASS"), ""))}},
		{name: "pods not running: pending, finished, terminating",
			objs: []any{db(), mt.WithPhase(mt.Pod(ns, "pending", mt.Env("db", "PASS")), "Pending"),
				mt.WithPhase(mt.Pod(ns, "done", mt.Env("db", "PASS")), "Succeeded"),
				mt.WithPhase(mt.Pod(ns, "failed", mt.Env("db", "PASS")), "Failed"),
				mt.Terminating(mt.Pod(ns, "leaving", mt.Env("db", "PASS")))}},
		{name: "a key the Secret lacks and an absent Secret are the missing-keys detector's",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "TOKEN"), mt.OptEnv("gone", "PASS"))}},
		{name: "an empty key only an ExternalSecret or driftwatch.io/expected-keys names",
			objs: []any{mt.ExpectKeys(db(), "PASS"), mt.ES(ns, "db", mt.ESData("PASS", "USER"))}},
		{name: "the same key name, empty in another namespace's Secret",
			objs: []any{mt.SecretValues("other", "db", "PASS", ""), mt.Pod(ns, "p", mt.Env("db", "PASS")), mt.Secret(ns, "db", "PASS")}},

		// driftwatch.io/ignore on a reading pod: its reads are dropped and counted.
		{name: "the only reader ignores the detector: silenced, counted once per key",
			objs:     []any{db(), ignoring(mt.Pod(ns, "p", mt.Env("db", "PASS"), mt.VolItem("db", "PASS")))},
			silenced: map[string]int{ns: 1}},
		{name: "one reader ignores it, another does not: the other is reported",
			objs:     []any{db(), ignoring(mt.Pod(ns, "quiet", mt.Env("db", "PASS"))), mt.Pod(ns, "loud", mt.Env("db", "PASS"))},
			want:     []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("loud"))},
			silenced: map[string]int{ns: 1}},
		{name: "an ignoring pod reading a key that holds a value silences nothing",
			objs: []any{db(), ignoring(mt.Pod(ns, "p", mt.Env("db", "USER")))}},

		// Scope and availability.
		{name: "a namespace-restricted view sees its namespace only",
			objs:  []any{db(), mt.Pod(ns, "p", mt.Env("db", "PASS")), mt.SecretValues("other", "db", "PASS", ""), mt.Pod("other", "q", mt.Env("db", "PASS"))},
			scope: "other",
			want:  []EmptyKeyRead{wantEmpty("other", "db", "PASS", barePod("q"))}},
		{name: "without the Secrets cache: nothing",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "PASS"))}, avail: mt.AllBut(model.ResSecrets)},
		{name: "without the Pods cache: nothing",
			objs: []any{db(), mt.Pod(ns, "p", mt.Env("db", "PASS"))}, avail: mt.AllBut(model.ResPods)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			avail := c.avail
			if avail == nil {
				avail = mt.All()
			}
			s := mt.NewStore(t, c.objs...)
			got := mt.Read(s, func(v model.View) SecretKeyEmptyReadResult {
				if c.scope != "" {
					v = v.InNamespace(c.scope)
				}
				return SecretKeyEmptyRead(v, avail)
			})
			checkSlice(t, "empty keys read", got.Empty, c.want)
			if len(got.Silenced) != len(c.silenced) {
				t.Errorf("silenced %v, want %v", got.Silenced, c.silenced)
			}
			for k, n := range c.silenced {
				if got.Silenced[k] != n {
					t.Errorf("silenced %v, want %v", got.Silenced, c.silenced)
				}
			}
		})
	}
}

// A write that fills the key clears the finding; one that empties it again
// brings it back (the detector keeps no state of its own).
func TestSecretKeyEmptyReadFollowsWrites(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.SecretValues(ns, "db", "PASS", ""), mt.Pod(ns, "p", mt.Env("db", "PASS")))
	run := func() []EmptyKeyRead {
		return mt.Read(s, func(v model.View) SecretKeyEmptyReadResult { return SecretKeyEmptyRead(v, mt.All()) }).Empty
	}
	checkSlice(t, "empty", run(), []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("p"))})
	s.UpsertSecret(mt.SecretValues(ns, "db", "PASS", "s3cret"), mt.T0.Add(1))
	checkSlice(t, "filled", run(), nil)
	s.UpsertSecret(mt.SecretValues(ns, "db", "PASS", ""), mt.T0.Add(2))
	checkSlice(t, "emptied again", run(), []EmptyKeyRead{wantEmpty(ns, "db", "PASS", barePod("p"))})
}
