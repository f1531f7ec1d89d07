package transform

// The Pod transform: Secret references, container start times, owner workload.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Pod is the transform of the Pod informer.
func (t *Transformer) Pod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	rec := &model.Pod{
		ObjectMeta:     objectMeta(&p.ObjectMeta),
		Phase:          model.Intern(string(p.Status.Phase)),
		Terminating:    p.DeletionTimestamp != nil,
		ServiceAccount: model.Intern(p.Spec.ServiceAccountName),
		Workload:       workloadOf(p),
	}
	rec.Workload.Kind = model.Intern(rec.Workload.Kind)
	if p.Status.StartTime != nil {
		rec.StartTime = p.Status.StartTime.Time
	}
	for k := range p.Annotations {
		if reloadAnnotation(k) {
			rec.ReloadAnnotations = append(rec.ReloadAnnotations, model.Intern(k))
		}
	}
	var parts podParts
	for _, v := range p.Spec.Volumes {
		pv := podVolume{name: v.Name}
		if v.Secret != nil {
			pv.secrets = append(pv.secrets, volSecret{name: v.Secret.SecretName,
				items: itemKeys(v.Secret.Items), optional: v.Secret.Optional != nil && *v.Secret.Optional})
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					pv.secrets = append(pv.secrets, volSecret{name: src.Secret.Name,
						items: itemKeys(src.Secret.Items), optional: src.Secret.Optional != nil && *src.Secret.Optional,
						projected: true})
				}
			}
		}
		parts.volumes = append(parts.volumes, pv)
	}
	addContainer := func(kind model.ContainerKind, name string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, mounts []corev1.VolumeMount) {
		c := podContainer{kind: kind, name: name}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				r := e.ValueFrom.SecretKeyRef
				c.env = append(c.env, podRef{secret: r.Name, key: r.Key, optional: r.Optional != nil && *r.Optional})
			}
		}
		for _, ef := range envFrom {
			if ef.SecretRef != nil {
				c.envFrom = append(c.envFrom, podRef{secret: ef.SecretRef.Name, optional: ef.SecretRef.Optional != nil && *ef.SecretRef.Optional})
			}
		}
		for _, m := range mounts {
			c.mounts = append(c.mounts, podMount{volume: m.Name, sub: m.SubPath != "" || m.SubPathExpr != ""})
		}
		parts.containers = append(parts.containers, c)
	}
	for _, c := range p.Spec.InitContainers {
		addContainer(model.ContainerInit, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
	}
	for _, c := range p.Spec.Containers {
		addContainer(model.ContainerRegular, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
	}
	for _, c := range p.Spec.EphemeralContainers {
		addContainer(model.ContainerEphemeral, c.Name, c.Env, c.EnvFrom, c.VolumeMounts)
	}
	for _, ps := range p.Spec.ImagePullSecrets {
		parts.imagePullSecrets = append(parts.imagePullSecrets, ps.Name)
	}
	statuses := [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses}
	for k, list := range statuses {
		for _, cs := range list {
			st := podStatus{name: cs.Name, running: cs.State.Running != nil}
			if st.running {
				st.startedAt = cs.State.Running.StartedAt.Time
			}
			parts.statuses[k] = append(parts.statuses[k], st)
		}
	}
	parts.assemble(rec, identity)
	return rec, nil
}

func identity(s string) string { return s }

func reloadAnnotation(k string) bool {
	return strings.HasPrefix(k, "reloader.stakater.com/") || strings.HasPrefix(k, "secret.reloader.stakater.com/") ||
		strings.HasPrefix(k, "wave.pusher.com/")
}

// podParts is what a Pod record is made of, read from a typed Pod (Pod) or from
// the wire (podFromWire): the same assembly makes the record of both.
type podParts struct {
	volumes    []podVolume
	containers []podContainer // init, regular, then ephemeral containers, each in order
	// statuses: initContainerStatuses, containerStatuses, ephemeralContainerStatuses.
	statuses [3][]podStatus
	// imagePullSecrets: spec.imagePullSecrets[].name, in order.
	imagePullSecrets []string
}

type podVolume struct {
	name    string
	secrets []volSecret // secret volume source, then projected secret sources
}

type podContainer struct {
	kind    model.ContainerKind
	name    string
	env     []podRef // env[].valueFrom.secretKeyRef
	envFrom []podRef // envFrom[].secretRef
	mounts  []podMount
}

type podRef struct {
	secret, key string
	optional    bool
}

type podMount struct {
	volume string
	sub    bool
}

type podStatus struct {
	name      string
	running   bool
	startedAt time.Time
}

// assemble completes rec with the Secret uses and containers of parts. own
// turns a string of parts into one the record may keep (the wire decoder's
// strings alias the response buffer; own copies them).
func (parts *podParts) assemble(rec *model.Pod, own func(string) string) {
	if rec.ServiceAccount == "" {
		rec.ServiceAccount = "default"
	}
	secretVols := map[string][]volSecret{}
	for _, v := range parts.volumes {
		if len(v.secrets) > 0 {
			secretVols[v.name] = append(secretVols[v.name], v.secrets...)
		}
	}
	mounted := map[string]bool{}
	for _, c := range parts.containers {
		name := model.Intern(c.name)
		for _, r := range c.env {
			rec.Uses = append(rec.Uses, model.SecretUse{Secret: own(r.secret), Key: model.Intern(r.key),
				Optional: r.optional, Via: model.ViaEnv, Container: name})
		}
		for _, r := range c.envFrom {
			rec.Uses = append(rec.Uses, model.SecretUse{Secret: own(r.secret),
				Optional: r.optional, Via: model.ViaEnvFrom, Container: name})
		}
		for _, m := range c.mounts {
			for _, vs := range secretVols[m.volume] {
				mounted[m.volume] = true
				via := model.ViaVolume
				switch {
				case vs.projected && m.sub:
					via = model.ViaProjectedSub
				case vs.projected:
					via = model.ViaProjected
				case m.sub:
					via = model.ViaVolumeSub
				}
				rec.Uses = append(rec.Uses, vs.uses(via, name, own)...)
			}
		}
		rec.Containers = append(rec.Containers, model.Container{Name: name, Kind: c.kind})
	}
	// A secret volume no container mounts still has to exist for the pod to start.
	for _, v := range parts.volumes {
		if !mounted[v.name] {
			for _, vs := range secretVols[v.name] {
				via := model.ViaVolume
				if vs.projected {
					via = model.ViaProjected
				}
				rec.Uses = append(rec.Uses, vs.uses(via, "", own)...)
			}
		}
	}
	// imagePullSecrets: the kubelet reads them to pull the pod's images. The
	// pod's own spec is what counts: the ServiceAccount admission plugin copies
	// the ServiceAccount's imagePullSecrets into a pod created without any
	// (plugin/pkg/admission/serviceaccount, on create only), so the informer
	// already sees them here. A reader, never an expectation: a missing pull
	// Secret fails loudly in the kubelet (ErrImagePull, an event naming it).
	// Empty names pass validation and the kubelet skips them; so do we.
	for _, ps := range parts.imagePullSecrets {
		if ps == "" || slices.ContainsFunc(rec.Uses, func(u model.SecretUse) bool {
			return u.Via == model.ViaImagePull && u.Secret == ps
		}) {
			continue
		}
		rec.Uses = append(rec.Uses, model.SecretUse{Secret: model.Intern(ps), Via: model.ViaImagePull})
	}
	for _, list := range parts.statuses {
		for _, cs := range list {
			for i := range rec.Containers {
				if rec.Containers[i].Name == cs.name && cs.running {
					rec.Containers[i].Running = true
					rec.Containers[i].StartedAt = cs.startedAt
				}
			}
		}
	}
	// The appends above leave up to half of each slice's capacity unused.
	rec.Uses = model.Clip(rec.Uses)
	rec.Containers = model.Clip(rec.Containers)
}

type volSecret struct {
	name      string
	items     []string
	optional  bool
	projected bool
}

func (vs volSecret) uses(via model.SecretVia, container string, own func(string) string) []model.SecretUse {
	name := own(vs.name)
	if len(vs.items) == 0 {
		return []model.SecretUse{{Secret: name, Optional: vs.optional, Via: via, Container: container}}
	}
	out := make([]model.SecretUse, 0, len(vs.items))
	for _, k := range vs.items {
		out = append(out, model.SecretUse{Secret: name, Key: k, Optional: vs.optional, Via: via, Container: container})
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
