package detect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Shared fixtures: records are built directly, the way internal/kube's transforms
// would build them from API objects, and put into a real model.Store.

var fxT0 = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

func fxMeta(ns, name string) model.ObjectMeta {
	return model.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}
}

// secret builds a Secret record holding keys (values are irrelevant: a fixed KeyInfo).
func secret(ns, name string, keys ...string) *model.Secret {
	s := &model.Secret{ObjectMeta: fxMeta(ns, name), Type: "Opaque", Keys: model.KeySet{}}
	for _, k := range keys {
		s.Keys.Set(k, model.KeyInfo{Len: 8})
	}
	return s
}

// annotated sets the parsed driftwatch.io/expected-keys annotation of a Secret.
func annotated(s *model.Secret, keys ...string) *model.Secret {
	s.ExpectedKeys = keys
	return s
}

// Secret uses, as the Pod transform produces them.
func useEnv(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaEnv, Container: "app"}
}

func optEnv(sec, key string) model.SecretUse {
	u := useEnv(sec, key)
	u.Optional = true
	return u
}

func envFrom(sec string) model.SecretUse {
	return model.SecretUse{Secret: sec, Via: model.ViaEnvFrom, Container: "app"}
}

func optEnvFrom(sec string) model.SecretUse {
	u := envFrom(sec)
	u.Optional = true
	return u
}

func volItem(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaVolume, Container: "app"}
}

func optVolItem(sec, key string) model.SecretUse {
	u := volItem(sec, key)
	u.Optional = true
	return u
}

func projItem(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaProjected, Container: "app"}
}

func inContainer(u model.SecretUse, c string) model.SecretUse {
	u.Container = c
	return u
}

// pod builds a running bare pod (its own workload).
func pod(ns, name string, uses ...model.SecretUse) *model.Pod {
	return &model.Pod{ObjectMeta: fxMeta(ns, name), Phase: "Running", ServiceAccount: "default",
		Workload: model.Workload{Kind: "Pod", Name: name}, Uses: uses,
		Containers: []model.Container{{Name: "app", Kind: model.ContainerRegular, Running: true}}}
}

// deployPod builds replica i of Deployment deploy.
func deployPod(ns, deploy string, i int, uses ...model.SecretUse) *model.Pod {
	p := pod(ns, fmt.Sprintf("%s-7d9c5b-%05d", deploy, i), uses...)
	p.Workload = model.Workload{Kind: "Deployment", Name: deploy}
	return p
}

func withPhase(p *model.Pod, phase string) *model.Pod {
	p.Phase = phase
	return p
}

// es builds an ExternalSecret as the transform leaves it: target defaulted to its
// name, creationPolicy Owner, deletionPolicy Retain, store SecretStore "vault",
// Ready=True SecretSynced, refreshed at fxT0 every hour.
func es(ns, name string, opts ...func(*model.ExternalSecret)) *model.ExternalSecret {
	e := &model.ExternalSecret{ObjectMeta: fxMeta(ns, name), APIVersion: "external-secrets.io/v1",
		Target: name, CreationPolicy: "Owner", DeletionPolicy: "Retain",
		StoreKind: "SecretStore", StoreName: "vault",
		RefreshInterval: time.Hour, RefreshIntervalSet: true,
		Ready: model.Condition{Status: "True", Reason: "SecretSynced", LastTransitionTime: fxT0}, RefreshTime: fxT0}
	for _, o := range opts {
		o(e)
	}
	return e
}

func esData(keys ...string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.DataKeys = keys }
}

// template sets template.data keys (sorted, as the transform sorts them) and mergePolicy.
func esTemplate(mergePolicy string, keys ...string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) {
		e.HasTemplate, e.TemplateMergePolicy, e.TemplateKeys = true, mergePolicy, keys
	}
}

func esDataFrom(n, find int) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = n, find }
}

func esTarget(name string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.Target = name }
}

func esReady(status, reason string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.Ready = model.Condition{Status: status, Reason: reason} }
}

func esCreation(policy string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.CreationPolicy = policy }
}

func esAPIVersion(v string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.APIVersion = v }
}

func esAnnotated(keys ...string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.ExpectedKeys = keys }
}

func esStore(kind, name string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.StoreKind, e.StoreName = kind, name }
}

func esRefreshed(at time.Time, interval time.Duration, set bool) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) {
		e.RefreshTime, e.RefreshInterval, e.RefreshIntervalSet = at, interval, set
	}
}

func esDecodeErr(msg string) func(*model.ExternalSecret) {
	return func(e *model.ExternalSecret) { e.DecodeErr = msg }
}

// secretStore builds a SecretStore (ns != "") or ClusterSecretStore record.
func secretStore(kind, ns, name, status, reason string) *model.SecretStore {
	return &model.SecretStore{ObjectMeta: fxMeta(ns, name), APIVersion: "external-secrets.io/v1",
		StoreKind: kind, Provider: "fake", Ready: model.Condition{Status: status, Reason: reason}}
}

// release builds one revision of a Helm release as the HelmRelease transform does.
func release(ns, rel string, rev int, status string, exps ...model.HelmExpectation) *model.HelmRelease {
	return &model.HelmRelease{ObjectMeta: fxMeta(ns, fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel, rev)),
		Release: rel, Revision: rev, Status: status, Expectations: exps}
}

func helmSecret(ns, name string, keys ...string) model.HelmExpectation {
	return model.HelmExpectation{Kind: "Secret", Namespace: ns, Name: name, Keys: keys}
}

func helmES(ns, name, tgt string, keys ...string) model.HelmExpectation {
	return model.HelmExpectation{Kind: "ExternalSecret", Namespace: ns, Name: name, Target: tgt,
		Keys: keys, SpecDataKeys: keys}
}

// newStore puts records into a fresh Store.
func newStore(t testing.TB, objs ...any) *model.Store {
	t.Helper()
	s := model.NewStore(nil)
	for _, o := range objs {
		upsertRecord(t, s, o)
	}
	return s
}

func upsertRecord(t testing.TB, s *model.Store, o any) {
	t.Helper()
	switch x := o.(type) {
	case *model.Secret:
		s.UpsertSecret(x, fxT0)
	case *model.Pod:
		s.UpsertPod(x)
	case []*model.Pod:
		for _, p := range x {
			s.UpsertPod(p)
		}
	case *model.ExternalSecret:
		s.UpsertExternalSecret(x)
	case *model.SecretStore:
		s.UpsertStore(x)
	case *model.HelmRelease:
		s.UpsertHelmRelease(x)
	case *model.ServiceAccount:
		s.UpsertServiceAccount(x)
	default:
		t.Fatalf("newStore: unsupported record %T", o)
	}
}

// all is every resource available; allBut makes the listed ones unavailable.
func availAll() model.Availability { return allBut() }

func allBut(rs ...model.Resource) model.Availability {
	a := model.Availability{}
	for _, r := range model.AllResources {
		a[r] = true
	}
	for _, r := range rs {
		a[r] = false
	}
	return a
}

func readView[T any](s *model.Store, fn func(v model.View) T) T {
	var out T
	s.Read(func(v model.View) { out = fn(v) })
	return out
}

// sameSlice is reflect.DeepEqual that treats nil and empty slices alike.
func sameSlice[T any](got, want []T) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

func checkSlice[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !sameSlice(got, want) {
		t.Errorf("%s:\n got: %s\nwant: %s", what, dumpSlice(got), dumpSlice(want))
	}
}

func dumpSlice[T any](xs []T) string {
	if len(xs) == 0 {
		return "[]"
	}
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "\n  %+v", x)
	}
	return b.String()
}

// Consumer shorthands.
func byDeploy(name string, pods int) Consumer {
	return Consumer{Kind: "Deployment", Name: name, Pods: pods}
}
func barePod(name string) Consumer   { return Consumer{Kind: "Pod", Name: name, Pods: 1} }
func byES(name string) Consumer      { return Consumer{Kind: "ExternalSecret", Name: name} }
func byRelease(name string) Consumer { return Consumer{Kind: "HelmRelease", Name: name} }
func bySecret(name string) Consumer  { return Consumer{Kind: "Secret", Name: name} }
