// Package kube connects driftwatch to the apiserver: informers whose transforms turn
// every object into a value-free model record before anything is cached, discovery
// of the optional APIs (ESO, Argo CD), and the per-resource health the detectors are
// gated on.
package kube

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/argocd"
	"github.com/driftwatch/driftwatch/internal/eso"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// keptAnnotation says which annotations survive the transform. Values of these are
// configuration, never secret data; ESO's data-hash annotation (a hash of the data)
// is deliberately not kept.
func keptAnnotation(k string) bool {
	switch k {
	case model.AnnExpectedKeys, model.AnnCompareWith, model.AnnAWSRoleARN, model.AnnAzureClientID, model.AnnGKEServiceAcct, model.AnnIgnore:
		return true
	}
	return false
}

func keptLabel(k string) bool {
	switch k {
	case model.LabelESOManaged, "azure.workload.identity/use":
		return true
	}
	return false
}

// maxKeptValue bounds the annotation values kept in the model.
const maxKeptValue = 4096

// Transformer turns API objects into model records.
type Transformer struct {
	FP *model.Fingerprinter
	// Logger receives one line per object version that fails to decode.
	Logger *slog.Logger

	logged sync.Map // uid/resourceVersion → struct{}
	nlog   atomic.Int64
	errs   sync.Map // decodeKey → *atomic.Uint64
}

type decodeKey struct{ resource, part, reason string }

// DecodeErrors counts object versions with a part that could not be decoded, per
// {resource, part, reason}; reason is too_large (over a documented limit) or
// malformed. An object version is counted once, however often a relist sees it.
func (t *Transformer) DecodeErrors() map[[3]string]uint64 {
	out := map[[3]string]uint64{}
	t.errs.Range(func(k, v any) bool {
		dk := k.(decodeKey)
		out[[3]string{dk.resource, dk.part, dk.reason}] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

func decodeReason(err string) string {
	if strings.Contains(err, "too large") || strings.Contains(err, "exceeds") || strings.Contains(err, "limit") {
		return "too_large"
	}
	return "malformed"
}

// maxLogged bounds the memory of "already logged" object versions.
const maxLogged = 10000

// decodeProblem logs a decode or parse failure once per object version. The error
// texts come from driftwatch's own parsers and never carry input bytes.
func (t *Transformer) decodeProblem(resource string, m *metav1.ObjectMeta, what, err string) {
	if err == "" {
		return
	}
	k := string(m.UID) + "/" + m.ResourceVersion + "/" + what
	if _, dup := t.logged.LoadOrStore(k, struct{}{}); dup {
		return
	}
	if t.nlog.Add(1) > maxLogged {
		t.logged.Clear()
		t.nlog.Store(0)
	}
	dk := decodeKey{resource, what, decodeReason(err)}
	c, ok := t.errs.Load(dk)
	if !ok {
		c, _ = t.errs.LoadOrStore(dk, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
	if t.Logger == nil {
		return
	}
	t.Logger.Warn("cannot decode part of an object; the rest is kept", "resource", resource,
		"namespace", m.Namespace, "name", m.Name, "part", what, "err", err)
}

// identity is the part of an object's metadata a record keeps. The namespace and
// the kept labels and annotation names are interned: they repeat across objects.
func identity(m *metav1.ObjectMeta) model.ObjectMeta {
	id := model.ObjectMeta{
		Name:              m.Name,
		Namespace:         model.Intern(m.Namespace),
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
	}
	for k, v := range m.Annotations {
		if keptAnnotation(k) {
			if len(v) > maxKeptValue {
				v = strings.Clone(v[:maxKeptValue])
			}
			if id.Annotations == nil {
				id.Annotations = map[string]string{}
			}
			id.Annotations[model.Intern(k)] = v
		}
	}
	for k, v := range m.Labels {
		if keptLabel(k) {
			if id.Labels == nil {
				id.Labels = map[string]string{}
			}
			id.Labels[model.Intern(k)] = model.Intern(v)
		}
	}
	return id
}

func owners(refs []metav1.OwnerReference) []model.OwnerRef {
	if len(refs) == 0 {
		return nil
	}
	out := make([]model.OwnerRef, 0, len(refs))
	for _, r := range refs {
		out = append(out, model.OwnerRef{APIVersion: model.Intern(r.APIVersion), Kind: model.Intern(r.Kind), Name: r.Name,
			UID: string(r.UID), Controller: r.Controller != nil && *r.Controller})
	}
	return out
}

// Secret is the transform of the main Secret informer. It is idempotent: a record
// passes through unchanged.
func (t *Transformer) Secret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	rec := &model.Secret{
		ObjectMeta: identity(&s.ObjectMeta),
		Type:       model.Intern(string(s.Type)),
		Owners:     owners(s.OwnerReferences),
		Managers:   parse.ManagedFields(s.ManagedFields, "f:data", "f:stringData"),
	}
	keys := make([]model.KeyEntry, 0, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		keys = append(keys, model.KeyEntry{Name: k, KeyInfo: t.FP.Key(v)})
		clear(v) // the transform owns the object: wipe the value as soon as it is summarised
	}
	for k, v := range s.StringData { // never set on objects read from the apiserver, but be safe
		// After the data keys: of two entries with the same name, the later wins.
		keys = append(keys, model.KeyEntry{Name: k, KeyInfo: t.FP.Key([]byte(v))})
	}
	rec.Keys = model.NewKeySetOf(keys)
	if la, ok := s.Annotations[model.AnnLastApplied]; ok {
		rec.LastApplied = parse.LastApplied(la, t.FP)
		if rec.LastApplied.Name == rec.Name {
			rec.LastApplied.Name = rec.Name // one string, not two
		}
		holds := parse.LastAppliedHolds(s.ManagedFields, [][]string{parse.PathSecretData, parse.PathSecretStringData})
		rec.LastApplied.HoldsList = holds[0]
		t.decodeProblem("secrets", &s.ObjectMeta, "last-applied", rec.LastApplied.Err)
	}
	if ek, ok := s.Annotations[model.AnnExpectedKeys]; ok {
		keys, err := parse.ExpectedKeys(ek)
		rec.ExpectedKeys = keys
		if err != nil {
			rec.ExpectedKeysErr = err.Error()
			t.decodeProblem("secrets", &s.ObjectMeta, model.AnnExpectedKeys, rec.ExpectedKeysErr)
		}
	}
	s.Data, s.StringData = nil, nil
	return rec, nil
}

// HelmRelease is the transform of the Helm release informer: decode the payload,
// extract the expectations, drop the payload.
func (t *Transformer) HelmRelease(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	if s.Type != HelmReleaseType {
		// Not a release: the apiserver's field selector keeps these out, a fake
		// client does not. A stub, which the handlers ignore, keeps such Secrets
		// out of the model's releases (whose changes invalidate every namespace).
		s.Data = nil
		return foreignStub(&s.ObjectMeta), nil
	}
	rec := &model.HelmRelease{
		ObjectMeta: identity(&s.ObjectMeta),
		Release:    s.Labels["name"],
		Status:     model.Intern(s.Labels["status"]),
	}
	rec.Revision, _ = strconv.Atoi(s.Labels["version"])
	info, exps, err := parse.HelmReleaseFromSecretData(s.Data)
	if err != nil {
		rec.DecodeErr = err.Error()
		t.decodeProblem("helmreleases", &s.ObjectMeta, "release", rec.DecodeErr)
	} else {
		rec.Expectations = exps
		if rec.Release == "" {
			rec.Release = info.Name
		}
		if rec.Revision == 0 {
			rec.Revision = info.Revision
		}
		if rec.Status == "" {
			rec.Status = info.Status
		}
	}
	for _, v := range s.Data {
		clear(v)
	}
	s.Data = nil
	return rec, nil
}

// Pod is the transform of the Pod informer.
func (t *Transformer) Pod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	rec := &model.Pod{
		ObjectMeta:     identity(&p.ObjectMeta),
		Phase:          model.Intern(string(p.Status.Phase)),
		ServiceAccount: model.Intern(p.Spec.ServiceAccountName),
		Workload:       workloadOf(p),
	}
	rec.Workload.Kind = model.Intern(rec.Workload.Kind)
	if rec.ServiceAccount == "" {
		rec.ServiceAccount = "default"
	}
	if p.Status.StartTime != nil {
		rec.StartTime = p.Status.StartTime.Time
	}
	for k := range p.Annotations {
		if strings.HasPrefix(k, "reloader.stakater.com/") || strings.HasPrefix(k, "secret.reloader.stakater.com/") ||
			strings.HasPrefix(k, "wave.pusher.com/") {
			rec.ReloadAnnotations = append(rec.ReloadAnnotations, model.Intern(k))
		}
	}
	secretVols := map[string][]volSecret{}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			secretVols[v.Name] = append(secretVols[v.Name], volSecret{name: v.Secret.SecretName,
				items: itemKeys(v.Secret.Items), optional: v.Secret.Optional != nil && *v.Secret.Optional})
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					secretVols[v.Name] = append(secretVols[v.Name], volSecret{name: src.Secret.Name,
						items: itemKeys(src.Secret.Items), optional: src.Secret.Optional != nil && *src.Secret.Optional,
						projected: true})
				}
			}
		}
	}
	mounted := map[string]bool{}
	addContainer := func(kind model.ContainerKind, name string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, mounts []corev1.VolumeMount) {
		name = model.Intern(name)
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				r := e.ValueFrom.SecretKeyRef
				rec.Uses = append(rec.Uses, model.SecretUse{Secret: r.Name, Key: model.Intern(r.Key),
					Optional: r.Optional != nil && *r.Optional, Via: model.ViaEnv, Container: name})
			}
		}
		for _, ef := range envFrom {
			if ef.SecretRef != nil {
				rec.Uses = append(rec.Uses, model.SecretUse{Secret: ef.SecretRef.Name,
					Optional: ef.SecretRef.Optional != nil && *ef.SecretRef.Optional, Via: model.ViaEnvFrom, Container: name})
			}
		}
		for _, m := range mounts {
			for _, vs := range secretVols[m.Name] {
				mounted[m.Name] = true
				sub := m.SubPath != "" || m.SubPathExpr != ""
				via := model.ViaVolume
				switch {
				case vs.projected && sub:
					via = model.ViaProjectedSub
				case vs.projected:
					via = model.ViaProjected
				case sub:
					via = model.ViaVolumeSub
				}
				rec.Uses = append(rec.Uses, vs.uses(via, name)...)
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		addContainer(model.ContainerInit, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
		rec.Containers = append(rec.Containers, model.Container{Name: model.Intern(c.Name), Kind: model.ContainerInit})
	}
	for _, c := range p.Spec.Containers {
		addContainer(model.ContainerRegular, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
		rec.Containers = append(rec.Containers, model.Container{Name: model.Intern(c.Name), Kind: model.ContainerRegular})
	}
	for _, c := range p.Spec.EphemeralContainers {
		addContainer(model.ContainerEphemeral, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
		rec.Containers = append(rec.Containers, model.Container{Name: model.Intern(c.Name), Kind: model.ContainerEphemeral})
	}
	// A secret volume no container mounts still has to exist for the pod to start.
	for _, v := range p.Spec.Volumes {
		if !mounted[v.Name] {
			for _, vs := range secretVols[v.Name] {
				via := model.ViaVolume
				if vs.projected {
					via = model.ViaProjected
				}
				rec.Uses = append(rec.Uses, vs.uses(via, "")...)
			}
		}
	}
	statuses := [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses}
	for _, list := range statuses {
		for _, cs := range list {
			for i := range rec.Containers {
				if rec.Containers[i].Name == cs.Name && cs.State.Running != nil {
					rec.Containers[i].Running = true
					rec.Containers[i].StartedAt = cs.State.Running.StartedAt.Time
				}
			}
		}
	}
	// The appends above leave up to half of each slice's capacity unused.
	rec.Uses = clip(rec.Uses)
	rec.Containers = clip(rec.Containers)
	return rec, nil
}

type volSecret struct {
	name      string
	items     []string
	optional  bool
	projected bool
}

func (vs volSecret) uses(via model.SecretVia, container string) []model.SecretUse {
	if len(vs.items) == 0 {
		return []model.SecretUse{{Secret: vs.name, Optional: vs.optional, Via: via, Container: container}}
	}
	out := make([]model.SecretUse, 0, len(vs.items))
	for _, k := range vs.items {
		out = append(out, model.SecretUse{Secret: vs.name, Key: k, Optional: vs.optional, Via: via, Container: container})
	}
	return out
}

func itemKeys(items []corev1.KeyToPath) []string {
	if len(items) == 0 {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, model.Intern(it.Key))
	}
	return out
}

// workloadOf names the controller of a pod: a ReplicaSet created by a Deployment
// is reported as the Deployment (its name minus the pod-template-hash suffix), one
// created by an Argo Rollout as the Rollout (rollouts-pod-template-hash), a Job
// created by a CronJob as the CronJob, anything else as its controller, and a bare
// pod as itself.
func workloadOf(p *corev1.Pod) model.Workload {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		switch o.Kind {
		case "ReplicaSet":
			if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return model.Workload{Kind: "Deployment", Name: strings.TrimSuffix(o.Name, "-"+h)}
			}
			if h := p.Labels["rollouts-pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return model.Workload{Kind: "Rollout", Name: strings.TrimSuffix(o.Name, "-"+h)}
			}
		case "Job":
			if cj, ok := cronJobOf(o.Name); ok {
				return model.Workload{Kind: "CronJob", Name: cj}
			}
		}
		return model.Workload{Kind: o.Kind, Name: o.Name}
	}
	return model.Workload{Kind: "Pod", Name: p.Name}
}

// Scheduled times, in minutes since the epoch, that a CronJob's Job name may
// carry: 2015-01-01 to 2050-01-01.
const (
	minCronMinutes = 23667840
	maxCronMinutes = 42076800
)

// cronJobOf recognises the name the CronJob controller gives a Job:
// "<cronjob>-<scheduled time in minutes since the epoch>" (kube-controller-manager
// cronjob_controllerv2 getJobName). A Job's pods do not name the CronJob, and a
// Job informer only for this would cost more than the name says; a hand-made Job
// whose name ends in a plausible minute count is the price.
func cronJobOf(job string) (string, bool) {
	i := strings.LastIndexByte(job, '-')
	if i <= 0 || len(job)-i-1 < 8 || len(job)-i-1 > 9 {
		return "", false
	}
	n, err := strconv.Atoi(job[i+1:])
	if err != nil || n < minCronMinutes || n > maxCronMinutes {
		return "", false
	}
	return job[:i], true
}

// ServiceAccount is the transform of the ServiceAccount informer.
func (t *Transformer) ServiceAccount(obj any) (any, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return obj, nil
	}
	return &model.ServiceAccount{ObjectMeta: identity(&sa.ObjectMeta)}, nil
}

// Namespace is the transform of the Namespace informer: the name and the
// driftwatch.io/ignore annotation.
func (t *Transformer) Namespace(obj any) (any, error) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	m := model.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}
	if v, ok := n.Annotations[model.AnnIgnore]; ok {
		if len(v) > maxKeptValue {
			v = strings.Clone(v[:maxKeptValue])
		}
		m.Annotations = map[string]string{model.AnnIgnore: v}
	}
	return &model.Namespace{ObjectMeta: m}, nil
}

// fromUnstructured decodes u into `into`, a struct that must hold only the
// top-level fields the transform reads (spec, status): the converter walks the
// struct's fields, so metadata — whose managedFields cost a JSON round trip per
// entry in the reflective converter — is never converted.
func fromUnstructured(u *unstructured.Unstructured, into any) string {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return "decode: " + truncate(err.Error(), 200)
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func condition(conds []eso.StatusCondition, typ string) model.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return model.Condition{Status: model.Intern(c.Status), Reason: model.Intern(c.Reason), LastTransitionTime: c.LastTransitionTime.Time}
		}
	}
	return model.Condition{}
}

// ExternalSecret is the transform of the ExternalSecret informer.
func (t *Transformer) ExternalSecret(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var es eso.ExternalSecret
	decodeErr := decodeExternalSecret(u.Object, &es)
	ann := u.GetAnnotations()
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
		Annotations: ann, Labels: u.GetLabels()}
	mf := managedFieldsOf(u)
	rec := &model.ExternalSecret{
		ObjectMeta: identity(&meta),
		APIVersion: model.Intern(u.GetAPIVersion()),
		DecodeErr:  decodeErr,
		Managers:   parse.ManagedFields(mf, "f:spec"),
	}
	t.decodeProblem("externalsecrets", &meta, "spec", decodeErr)
	if la, ok := ann[model.AnnLastApplied]; ok {
		rec.LastApplied = parse.LastApplied(la, t.FP)
		if rec.LastApplied.Name == rec.Name {
			rec.LastApplied.Name = rec.Name
		}
		holds := parse.LastAppliedHolds(mf, [][]string{parse.PathSpecData}, [][]string{parse.PathCreationPolicy})
		rec.LastApplied.HoldsList, rec.LastApplied.HoldsCreationPolicy = holds[0], holds[1]
		t.decodeProblem("externalsecrets", &meta, "last-applied", rec.LastApplied.Err)
	}
	if ek, ok := ann[model.AnnExpectedKeys]; ok {
		keys, err := parse.ExpectedKeys(ek)
		rec.ExpectedKeys = keys
		if err != nil {
			rec.ExpectedKeysErr = err.Error()
			t.decodeProblem("externalsecrets", &meta, model.AnnExpectedKeys, rec.ExpectedKeysErr)
		}
	}
	rec.CreationPolicyApplied = creationPolicyApplied(mf)
	sp := es.Spec
	rec.Target = sp.Target.Name
	if rec.Target == "" {
		rec.Target = rec.Name
	}
	rec.CreationPolicy = model.Intern(sp.Target.CreationPolicy)
	if rec.CreationPolicy == "" {
		rec.CreationPolicy = "Owner"
	}
	rec.DeletionPolicy = model.Intern(sp.Target.DeletionPolicy)
	if rec.DeletionPolicy == "" {
		rec.DeletionPolicy = "Retain"
	}
	if len(sp.Data) > 0 {
		rec.DataKeys = make([]string, 0, len(sp.Data))
	}
	for _, d := range sp.Data {
		rec.DataKeys = append(rec.DataKeys, model.Intern(d.SecretKey))
	}
	if tpl := sp.Target.Template; tpl != nil {
		rec.HasTemplate = true
		rec.TemplateMergePolicy = model.Intern(tpl.MergePolicy)
		rec.TemplateRendersData = len(tpl.Data) > 0 || len(tpl.TemplateFrom) > 0
		for k := range tpl.Data {
			rec.TemplateKeys = append(rec.TemplateKeys, model.Intern(k))
		}
		for _, tf := range tpl.TemplateFrom {
			if tf.Target != "" && !strings.EqualFold(tf.Target, "Data") {
				continue
			}
			for _, ref := range []*eso.TemplateRef{tf.ConfigMap, tf.Secret} {
				if ref == nil {
					continue
				}
				for _, it := range ref.Items {
					if it.TemplateAs == "" || it.TemplateAs == "Values" {
						rec.TemplateKeys = append(rec.TemplateKeys, model.Intern(it.Key))
					}
				}
			}
		}
		slices.Sort(rec.TemplateKeys)
	}
	rec.DataFrom = len(sp.DataFrom)
	for _, df := range sp.DataFrom {
		if df.Find != nil {
			rec.DataFromFind++
		}
	}
	rec.StoreKind = model.Intern(sp.SecretStoreRef.Kind)
	if rec.StoreKind == "" {
		rec.StoreKind = "SecretStore"
	}
	rec.StoreName = model.Intern(sp.SecretStoreRef.Name)
	rec.RefreshPolicy = model.Intern(sp.RefreshPolicy)
	if sp.RefreshInterval != nil {
		rec.RefreshInterval, rec.RefreshIntervalSet = sp.RefreshInterval.Duration, true
	}
	rec.Ready = condition(es.Status.Conditions, "Ready")
	rec.RefreshTime = es.Status.RefreshTime.Time
	return rec, nil
}

// SecretStore returns the transform for SecretStores (kind "SecretStore") or
// ClusterSecretStores.
func (t *Transformer) SecretStore(kind string) func(any) (any, error) {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		var body struct { // spec and status only: see fromUnstructured
			Spec   eso.SecretStoreSpec   `json:"spec,omitempty"`
			Status eso.SecretStoreStatus `json:"status,omitempty"`
		}
		decodeErr := fromUnstructured(u, &body)
		st := eso.SecretStore{Spec: body.Spec, Status: body.Status}
		meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
		rec := &model.SecretStore{ObjectMeta: identity(&meta), APIVersion: model.Intern(u.GetAPIVersion()), StoreKind: kind, DecodeErr: decodeErr}
		// The local struct holds no provider field that carries data (the fake
		// provider's values are not decoded), so the error names types only.
		t.decodeProblem(strings.ToLower(kind)+"s", &meta, "spec", decodeErr)
		if prov, ok, _ := unstructured.NestedMap(u.Object, "spec", "provider"); ok {
			for name := range prov {
				rec.Provider = name // exactly one provider is set
			}
		}
		resolveAuth(rec, &st)
		rec.Ready = condition(st.Status.Conditions, "Ready")
		return rec, nil
	}
}

func saRef(sel *eso.ServiceAccountSelector, storeNS string) *model.Ref {
	if sel == nil || sel.Name == "" {
		return nil
	}
	ns := storeNS
	if sel.Namespace != nil && *sel.Namespace != "" {
		ns = *sel.Namespace
	}
	return &model.Ref{Namespace: ns, Name: sel.Name}
}

func resolveAuth(rec *model.SecretStore, st *eso.SecretStore) {
	p := st.Spec.Provider
	if p == nil {
		return
	}
	ns := rec.Namespace
	switch {
	case p.AWS != nil:
		switch {
		case p.AWS.Auth.JWTAuth != nil:
			rec.AuthType = "jwt"
			rec.AuthSA = saRef(p.AWS.Auth.JWTAuth.ServiceAccountRef, ns)
		case p.AWS.Auth.SecretRef != nil:
			rec.AuthType = "static"
		default:
			rec.AuthType = "ambient"
		}
	case p.AzureKV != nil:
		at := "ServicePrincipal"
		if p.AzureKV.AuthType != nil && *p.AzureKV.AuthType != "" {
			at = *p.AzureKV.AuthType
		}
		rec.ClientIDSet = p.AzureKV.AuthSecretRef != nil && p.AzureKV.AuthSecretRef.ClientID != nil
		switch at {
		case "WorkloadIdentity":
			rec.AuthType = "workload_identity"
			rec.AuthSA = saRef(p.AzureKV.ServiceAccountRef, ns)
			if rec.AuthSA == nil {
				rec.AuthType = "ambient"
			}
		case "ManagedIdentity":
			rec.AuthType = "managed_identity"
		default:
			rec.AuthType = "static"
		}
	case p.GCPSM != nil:
		switch {
		case p.GCPSM.Auth.WorkloadIdentity != nil:
			rec.AuthType = "workload_identity"
			rec.AuthSA = saRef(&p.GCPSM.Auth.WorkloadIdentity.ServiceAccountRef, ns)
		case p.GCPSM.Auth.SecretRef != nil:
			rec.AuthType = "static"
		default:
			rec.AuthType = "ambient"
		}
	case p.Vault != nil:
		if p.Vault.Auth != nil && p.Vault.Auth.Kubernetes != nil {
			rec.AuthType = "jwt"
			rec.AuthSA = saRef(p.Vault.Auth.Kubernetes.ServiceAccountRef, ns)
		}
	}
}

// Application is the transform of the Argo CD Application informer.
func (t *Transformer) Application(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var app struct { // spec and status only: see fromUnstructured
		Spec   argocd.ApplicationSpec   `json:"spec,omitempty"`
		Status argocd.ApplicationStatus `json:"status,omitempty"`
	}
	decodeErr := fromUnstructured(u, &app)
	meta := metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(), Annotations: u.GetAnnotations()}
	t.decodeProblem("applications", &meta, "spec", decodeErr)
	rec := &model.ArgoApp{ObjectMeta: identity(&meta), DecodeErr: decodeErr,
		SyncStatus: app.Status.Sync.Status, SyncRevision: app.Status.Sync.Revision, SyncRevisions: app.Status.Sync.Revisions,
		DestinationNamespace: app.Spec.Destination.Namespace}
	for _, d := range app.Spec.IgnoreDifferences {
		rec.IgnoreDifferences = append(rec.IgnoreDifferences, model.IgnoreDifference{Group: d.Group, Kind: d.Kind,
			Name: d.Name, Namespace: d.Namespace, JSONPointers: d.JSONPointers, JQPathExpressions: d.JQPathExpressions,
			ManagedFieldsManagers: d.ManagedFieldsManagers})
	}
	if sp := app.Spec.SyncPolicy; sp != nil {
		for _, o := range sp.SyncOptions {
			if strings.EqualFold(strings.ReplaceAll(o, " ", ""), "RespectIgnoreDifferences=true") {
				rec.RespectIgnoreDifferences = true
			}
		}
		if sp.Automated != nil {
			// Argo CD v3's automated.enabled: false turns automated sync off
			// (SyncPolicy.IsAutomatedSyncEnabled); v2 has no such field.
			enabled, found, err := unstructured.NestedBool(u.Object, "spec", "syncPolicy", "automated", "enabled")
			rec.Automated = !found || err != nil || enabled
			rec.SelfHeal = rec.Automated && sp.Automated.SelfHeal
		}
	}
	if op := app.Status.OperationState; op != nil {
		rec.OperationPhase = op.Phase
		if op.FinishedAt != nil {
			rec.OperationFinishedAt = op.FinishedAt.Time
		}
		if sr := op.SyncResult; sr != nil {
			rec.OperationRevision, rec.OperationRevisions = sr.Revision, sr.Revisions
		}
	}
	for _, r := range app.Status.Resources {
		rec.Resources = append(rec.Resources, model.ArgoResource{Group: r.Group, Kind: r.Kind,
			Namespace: r.Namespace, Name: r.Name, Status: r.Status, Hook: r.Hook})
	}
	return rec, nil
}

// managedFieldsOf reads metadata.managedFields of an unstructured object like
// u.GetManagedFields, without the reflective converter (which costs more than the
// rest of the ExternalSecret transform): the fields read by parse.ManagedFields
// and creationPolicyApplied, fieldsV1 re-encoded as JSON. A malformed entry makes
// the whole list nil, as in GetManagedFields.
func managedFieldsOf(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	if !found || err != nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil
		}
		var e metav1.ManagedFieldsEntry
		for k, v := range m {
			switch k {
			case "manager", "operation", "apiVersion", "fieldsType", "subresource", "time":
				s, ok := v.(string)
				if !ok {
					if v == nil {
						continue
					}
					return nil
				}
				switch k {
				case "manager":
					e.Manager = s
				case "operation":
					e.Operation = metav1.ManagedFieldsOperationType(s)
				case "apiVersion":
					e.APIVersion = s
				case "fieldsType":
					e.FieldsType = s
				case "subresource":
					e.Subresource = s
				case "time":
					var t metav1.Time
					if err := t.UnmarshalQueryParameter(s); err != nil {
						return nil
					}
					e.Time = &t
				}
			case "fieldsV1":
				if v == nil {
					continue
				}
				raw, ok := appendFieldSet(nil, v)
				if !ok {
					return nil
				}
				e.FieldsV1 = metav1.NewFieldsV1(string(raw))
			}
		}
		out = append(out, e)
	}
	return out
}

// appendFieldSet encodes a decoded fieldsV1 value as JSON: nested objects with
// sorted keys (what json.Marshal writes, minus its HTML escaping), any other value
// through json.Marshal.
func appendFieldSet(b []byte, v any) ([]byte, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		j, err := json.Marshal(v)
		return append(b, j...), err == nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		if b, ok = appendFieldSet(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONString quotes s as a JSON string (s comes from a JSON decoder: valid
// UTF-8, written as is).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// maxFieldsV1 bounds the managedFields entry parsed for creationPolicy ownership.
const maxFieldsV1 = 256 << 10

// creationPolicyApplied reads the server-side Apply entries that own parts of
// spec: "set" when one of them owns f:spec.f:target.f:creationPolicy, "unset" when
// none does, "" when there is no such entry (Update entries also own the CRD's
// defaults, so they cannot tell what a user wrote).
func creationPolicyApplied(entries []metav1.ManagedFieldsEntry) string {
	verdict := ""
	for _, e := range entries {
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil ||
			len(e.FieldsV1.GetRawBytes()) > maxFieldsV1 {
			continue
		}
		var f struct {
			Spec *struct {
				Target *struct {
					CreationPolicy *json.RawMessage `json:"f:creationPolicy"`
				} `json:"f:target"`
			} `json:"f:spec"`
		}
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &f) != nil || f.Spec == nil {
			continue
		}
		if f.Spec.Target != nil && f.Spec.Target.CreationPolicy != nil {
			return "set"
		}
		verdict = "unset"
	}
	return verdict
}

// clip returns xs without unused capacity, copying it only when that saves memory.
func clip[T any](xs []T) []T {
	if cap(xs) == len(xs) {
		return xs
	}
	if len(xs) == 0 {
		return nil
	}
	return slices.Clone(xs)
}
