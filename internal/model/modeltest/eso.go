package modeltest

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// ESOption changes an ExternalSecret record being built. A func literal of
// this signature is an option too, for fields without a named one.
type ESOption func(*model.ExternalSecret)

// ES builds an ExternalSecret as the transform leaves a healthy, synced v1
// object: APIVersion external-secrets.io/v1, target defaulted to its name,
// creationPolicy Owner, deletionPolicy Retain, store SecretStore "vault",
// refreshInterval 1h (set), refreshPolicy "" (periodic), Ready=True
// SecretSynced since T0, refreshed at T0; no spec.data, template, dataFrom,
// managers, last-applied or expected keys; metadata as Meta. Options apply
// after these defaults.
func ES(ns, name string, opts ...ESOption) *model.ExternalSecret {
	e := &model.ExternalSecret{ObjectMeta: Meta(ns, name), APIVersion: "external-secrets.io/v1",
		ESWrites:  model.ESWrites{Target: name, CreationPolicy: "Owner", DeletionPolicy: "Retain"},
		StoreKind: "SecretStore", StoreName: "vault",
		RefreshInterval: time.Hour, RefreshIntervalSet: true,
		Ready: model.Condition{Status: "True", Reason: "SecretSynced", LastTransitionTime: T0}, RefreshTime: T0}
	for _, o := range opts {
		o(e)
	}
	return e
}

// BareES builds an ExternalSecret with only its metadata (as Meta) and Target
// (its name) set: no APIVersion, policies, store, refresh or Ready condition.
// It is for tests that spell out every field they rely on.
func BareES(ns, name string, opts ...ESOption) *model.ExternalSecret {
	e := &model.ExternalSecret{ObjectMeta: Meta(ns, name), ESWrites: model.ESWrites{Target: name}}
	for _, o := range opts {
		o(e)
	}
	return e
}

// ESData sets spec.data[].secretKey, in order (spec.data present).
func ESData(keys ...string) ESOption {
	return func(e *model.ExternalSecret) { e.DataKeys, e.HasSpecData = keys, true }
}

// ESTemplate sets a template (HasTemplate) with the given mergePolicy ("" is the
// default, Replace) and template.data keys (give them sorted, as the transform
// sorts them). TemplateRendersData is left false.
func ESTemplate(mergePolicy string, keys ...string) ESOption {
	return func(e *model.ExternalSecret) {
		e.HasTemplate, e.TemplateMergePolicy, e.TemplateKeys = true, mergePolicy, keys
	}
}

// ESDataFrom sets the number of spec.dataFrom entries and of those using find.
func ESDataFrom(n, find int) ESOption {
	return func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = n, find }
}

// ESTarget sets spec.target.name.
func ESTarget(name string) ESOption {
	return func(e *model.ExternalSecret) { e.Target = name }
}

// ESReady sets the Ready condition's status and reason, with no transition time
// (status "" is an absent condition).
func ESReady(status, reason string) ESOption {
	return func(e *model.ExternalSecret) { e.Ready = model.Condition{Status: status, Reason: reason} }
}

// ESReadySince sets the Ready condition with its lastTransitionTime.
func ESReadySince(status, reason string, at time.Time) ESOption {
	return func(e *model.ExternalSecret) {
		e.Ready = model.Condition{Status: status, Reason: reason, LastTransitionTime: at}
	}
}

// ESCreation sets spec.target.creationPolicy (live value).
func ESCreation(policy string) ESOption {
	return func(e *model.ExternalSecret) { e.CreationPolicy = policy }
}

// ESDeletion sets spec.target.deletionPolicy.
func ESDeletion(policy string) ESOption {
	return func(e *model.ExternalSecret) { e.DeletionPolicy = policy }
}

// ESAPIVersion sets the API version the object was read at.
func ESAPIVersion(v string) ESOption {
	return func(e *model.ExternalSecret) { e.APIVersion = v }
}

// ESExpectKeys sets the parsed driftwatch.io/expected-keys annotation (the
// ExpectedKeys field; the raw annotation is not added).
func ESExpectKeys(keys ...string) ESOption {
	return func(e *model.ExternalSecret) { e.ExpectedKeys = keys }
}

// ESStore sets spec.secretStoreRef: kind and name.
func ESStore(kind, name string) ESOption {
	return func(e *model.ExternalSecret) { e.StoreKind, e.StoreName = kind, name }
}

// ESRefreshed sets status.refreshTime and spec.refreshInterval (set: present).
func ESRefreshed(at time.Time, interval time.Duration, set bool) ESOption {
	return func(e *model.ExternalSecret) {
		e.RefreshTime, e.RefreshInterval, e.RefreshIntervalSet = at, interval, set
	}
}

// ESRefreshPolicy sets spec.refreshPolicy (Periodic, CreatedOnce, OnChange).
func ESRefreshPolicy(p string) ESOption {
	return func(e *model.ExternalSecret) { e.RefreshPolicy = p }
}

// ESRefreshInterval sets spec.refreshInterval (set: present; absent means the
// CRD's default, 1h) and leaves status.refreshTime alone.
func ESRefreshInterval(interval time.Duration, set bool) ESOption {
	return func(e *model.ExternalSecret) { e.RefreshInterval, e.RefreshIntervalSet = interval, set }
}

// ESGenerated adds n spec.dataFrom entries whose source is a generator
// (sourceRef.generatorRef).
func ESGenerated(n int) ESOption {
	return func(e *model.ExternalSecret) { e.DataFrom += n; e.DataFromGenerators += n }
}

// ESSynced sets metadata.generation and status.syncedResourceVersion as ESO
// writes it after a sync of generation synced ("<generation>-<hash>").
func ESSynced(generation, synced int64) ESOption {
	return func(e *model.ExternalSecret) {
		e.Generation, e.SyncedVersion = generation, fmt.Sprintf("%d-5d1c0e8f", synced)
	}
}

// ESDecodeErr marks the object as undecodable.
func ESDecodeErr(msg string) ESOption {
	return func(e *model.ExternalSecret) { e.DecodeErr = msg }
}

// ESLastApplied sets the last-applied summary; an empty la.Name is filled with
// the ExternalSecret's name (kubectl's annotation names its own object).
func ESLastApplied(la *model.LastApplied) ESOption {
	return func(e *model.ExternalSecret) {
		if la != nil && la.Name == "" {
			la.Name = e.Name
		}
		e.LastApplied = la
	}
}

// ESManagers appends managedFields summaries.
func ESManagers(mf ...model.ManagedField) ESOption {
	return func(e *model.ExternalSecret) { e.Managers = append(e.Managers, mf...) }
}

// StoreOption changes a SecretStore or ClusterSecretStore record being built.
type StoreOption func(*model.SecretStore)

// SecretStore builds a SecretStore in namespace ns: APIVersion
// external-secrets.io/v1, provider "fake", Ready=True Valid (no transition
// time), no auth (AuthType "", no ServiceAccount); metadata as Meta.
func SecretStore(ns, name string, opts ...StoreOption) *model.SecretStore {
	return store("SecretStore", ns, name, opts)
}

// ClusterSecretStore builds a ClusterSecretStore (namespace ""), with the
// defaults of SecretStore.
func ClusterSecretStore(name string, opts ...StoreOption) *model.SecretStore {
	return store("ClusterSecretStore", "", name, opts)
}

func store(kind, ns, name string, opts []StoreOption) *model.SecretStore {
	s := &model.SecretStore{ObjectMeta: Meta(ns, name), APIVersion: "external-secrets.io/v1",
		StoreKind: kind, Provider: "fake", Ready: model.Condition{Status: "True", Reason: "Valid"}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// StoreReady sets the Ready condition (status "" is an absent condition).
func StoreReady(status, reason string) StoreOption {
	return func(s *model.SecretStore) { s.Ready = model.Condition{Status: status, Reason: reason} }
}

// StoreProvider sets the provider (aws, azurekv, gcpsm, vault, fake, ...).
func StoreProvider(p string) StoreOption {
	return func(s *model.SecretStore) { s.Provider = p }
}

// StoreAuth sets the provider's auth type (workload_identity, jwt, ambient,
// static, ...) and the ServiceAccount it names (nil: none).
func StoreAuth(authType string, sa *model.Ref) StoreOption {
	return func(s *model.SecretStore) { s.AuthType, s.AuthSA = authType, sa }
}

// ServiceAccount builds a ServiceAccount with annotations given as key, value
// pairs (the workload-identity annotations); metadata as Meta.
func ServiceAccount(ns, name string, ann ...string) *model.ServiceAccount {
	sa := &model.ServiceAccount{ObjectMeta: Meta(ns, name)}
	if len(ann) > 0 {
		Annotate(sa, ann...)
	}
	return sa
}
