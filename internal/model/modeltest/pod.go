package modeltest

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Secret uses, as the Pod transform produces them. Every use is made by the
// container "app" (Pod's one container) unless InContainer says otherwise.

// Env is env[].valueFrom.secretKeyRef of key in sec, not optional.
func Env(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaEnv, Container: "app"}
}

// OptEnv is Env with optional: true.
func OptEnv(sec, key string) model.SecretUse { return Optional(Env(sec, key)) }

// EnvFrom is envFrom[].secretRef of the whole Secret sec (Key ""), not optional.
func EnvFrom(sec string) model.SecretUse {
	return model.SecretUse{Secret: sec, Via: model.ViaEnvFrom, Container: "app"}
}

// OptEnvFrom is EnvFrom with optional: true.
func OptEnvFrom(sec string) model.SecretUse { return Optional(EnvFrom(sec)) }

// VolItem is a secret volume item (items[].key) of sec, mounted without
// subPath (refreshed by the kubelet), not optional.
func VolItem(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaVolume, Container: "app"}
}

// OptVolItem is VolItem with optional: true.
func OptVolItem(sec, key string) model.SecretUse { return Optional(VolItem(sec, key)) }

// ProjItem is an item of a projected volume's secret source, not optional.
func ProjItem(sec, key string) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: model.ViaProjected, Container: "app"}
}

// ImagePull is spec.imagePullSecrets naming sec: a pod-level use (Container
// "", Key ""), never optional.
func ImagePull(sec string) model.SecretUse {
	return model.SecretUse{Secret: sec, Via: model.ViaImagePull}
}

// Use is any use of sec (key "" for the whole Secret) via, by container "app",
// not optional.
func Use(sec, key string, via model.SecretVia) model.SecretUse {
	return model.SecretUse{Secret: sec, Key: key, Via: via, Container: "app"}
}

// Optional marks a use optional.
func Optional(u model.SecretUse) model.SecretUse {
	u.Optional = true
	return u
}

// InContainer moves a use to container c ("" for a pod-level use: a volume not
// mounted, an imagePullSecret).
func InContainer(u model.SecretUse, c string) model.SecretUse {
	u.Container = c
	return u
}

// Pod builds a running bare pod (its own workload: Workload{Pod, name}) with the
// given uses: phase Running, ServiceAccount "default", one regular container
// "app" that is running, no start times (StartTime and StartedAt zero), no
// reload annotations; metadata as Meta.
func Pod(ns, name string, uses ...model.SecretUse) *model.Pod {
	return &model.Pod{ObjectMeta: Meta(ns, name), Phase: "Running", ServiceAccount: "default",
		Workload: model.Workload{Kind: "Pod", Name: name}, Uses: uses,
		Containers: []model.Container{{Name: "app", Kind: model.ContainerRegular, Running: true}}}
}

// DeployPod builds replica i of Deployment deploy: a Pod named
// "<deploy>-7d9c5b-<i, five digits>" (one ReplicaSet hash for all replicas)
// whose Workload is {Deployment, deploy}; otherwise as Pod.
func DeployPod(ns, deploy string, i int, uses ...model.SecretUse) *model.Pod {
	return WithWorkload(Pod(ns, fmt.Sprintf("%s-7d9c5b-%05d", deploy, i), uses...), "Deployment", deploy)
}

// WithPhase sets a pod's phase.
func WithPhase(p *model.Pod, phase string) *model.Pod {
	p.Phase = phase
	return p
}

// Terminating marks a pod as deleted and shutting down (deletionTimestamp set).
func Terminating(p *model.Pod) *model.Pod {
	p.Terminating = true
	return p
}

// WithWorkload sets the workload that owns a pod.
func WithWorkload(p *model.Pod, kind, name string) *model.Pod {
	p.Workload = model.Workload{Kind: kind, Name: name}
	return p
}

// StartedAt sets a pod's status.startTime and every container's
// state.running.startedAt (zero: unknown).
func StartedAt(p *model.Pod, podStart, containerStart time.Time) *model.Pod {
	p.StartTime = podStart
	for i := range p.Containers {
		p.Containers[i].StartedAt = containerStart
	}
	return p
}
