package demo

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Flipping values and stale pods:
//   - shop/session-key is written alternately by ESO and by a client-side kubectl
//     apply: its value flips A→B→A every few seconds (flips counter, flapping with
//     both writers named).
//   - shop/api-creds changes once ~3 s after start while the two pods of
//     Deployment "api" read it through env: both become stale; ~15 s later one pod
//     "restarts" (a new startedAt) and its finding clears.
//   - healthy/app-settings only ever gets label edits by its data owner (helm, as a
//     chart version bump does): never a data change, a flip, or a stale pod.

const (
	flipsESOManager   = "externalsecrets.external-secrets.io/session-key"
	flipsKubectl      = "kubectl-client-side-apply"
	flipsHelmManager  = "helm"
	flipsCredsManager = "externalsecrets.external-secrets.io/api-creds"
	flipsAPIPod1      = "api-5d8f7c9b4-p1"
	flipsAPIPod2      = "api-5d8f7c9b4-p2"
)

var flipsDataFields = metav1.NewFieldsV1(`{"f:data":{}}`)
var flipsDataAndLabels = metav1.NewFieldsV1(`{"f:data":{},"f:metadata":{"f:labels":{}}}`)

func init() {
	addPart(flipsPart)
	addActivity(flipSessionKey)
	addActivity(rotateAPICreds)
	addActivity(relabelAppSettings)
}

// flipsManaged builds managedFields entries; data entries own f:data.
func flipsManaged(entries ...metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry { return entries }

func flipsEntry(manager string, at time.Time, fields *metav1.FieldsV1) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at.UTC().Truncate(time.Second))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: fields}
}

func flipsPart(now time.Time) (core, dyn []runtime.Object) {
	started := now.Add(-1 * time.Hour)

	sk := secret("shop", "session-key", map[string]string{"SESSION_KEY": "session-key-value-A"}, nil)
	sk.ManagedFields = flipsManaged(flipsEntry(flipsESOManager, now.Add(-2*time.Hour), flipsDataFields))

	creds := secret("shop", "api-creds", map[string]string{"username": "api", "password": "api-password-v1"}, nil)
	creds.ManagedFields = flipsManaged(flipsEntry(flipsCredsManager, now.Add(-2*time.Hour), flipsDataFields))

	settings := secret("healthy", "app-settings", map[string]string{"LOG_LEVEL": "info"}, nil)
	settings.Labels = map[string]string{"helm.sh/chart": "app-1.0.0"}
	settings.ManagedFields = flipsManaged(flipsEntry(flipsHelmManager, now.Add(-2*time.Hour), flipsDataAndLabels))

	core = append(core, sk, creds, settings,
		pod("shop", flipsAPIPod1, "api", started, []envRef{{"api-creds", "password", false}, {"api-creds", "username", false}}, nil),
		pod("shop", flipsAPIPod2, "api", started, []envRef{{"api-creds", "password", false}}, nil),
		pod("healthy", "app-5d8f7c9b4-h1", "app", started, []envRef{{"app-settings", "LOG_LEVEL", false}}, nil),
	)
	return core, nil
}

// flipsEvery runs fn every period until ctx ends; fn's argument counts the ticks
// from 1.
func flipsEvery(ctx context.Context, period time.Duration, fn func(n int)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(n)
		}
	}
}

// flipSessionKey: kubectl applies an old value, ESO writes its value back, and so
// on: A→B→A→B…
func flipSessionKey(ctx context.Context, d *Demo) {
	secrets := d.Core().CoreV1().Secrets("shop")
	flipsEvery(ctx, 3*time.Second, func(n int) {
		s, err := secrets.Get(ctx, "session-key", metav1.GetOptions{})
		if err != nil {
			d.log.Warn("demo: get session-key", "err", err)
			return
		}
		s = s.DeepCopy()
		value, manager := "session-key-value-A", flipsESOManager
		if n%2 == 1 {
			value, manager = "session-key-value-B", flipsKubectl
		}
		s.Data = map[string][]byte{"SESSION_KEY": []byte(value)}
		// The fake clientset tracks managedFields like the apiserver: the field
		// manager of the write takes ownership of the data and its entry's time.
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: manager}); err != nil {
			d.log.Warn("demo: flip session-key", "err", err)
		}
	})
}

// rotateAPICreds changes api-creds once (the api pods become stale), then
// restarts one api pod (its finding clears).
func rotateAPICreds(ctx context.Context, d *Demo) {
	if !flipsSleep(ctx, 3*time.Second) {
		return
	}
	secrets := d.Core().CoreV1().Secrets("shop")
	if s, err := secrets.Get(ctx, "api-creds", metav1.GetOptions{}); err == nil {
		s = s.DeepCopy()
		s.Data = map[string][]byte{"username": []byte("api"), "password": []byte("api-password-v2")}
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: flipsCredsManager}); err != nil {
			d.log.Warn("demo: rotate api-creds", "err", err)
		}
	} else {
		d.log.Warn("demo: get api-creds", "err", err)
	}
	if !flipsSleep(ctx, 15*time.Second) {
		return
	}
	pods := d.Core().CoreV1().Pods("shop")
	p, err := pods.Get(ctx, flipsAPIPod1, metav1.GetOptions{})
	if err != nil {
		d.log.Warn("demo: get api pod", "err", err)
		return
	}
	p = p.DeepCopy()
	restarted := metav1.NewTime(time.Now().UTC().Truncate(time.Second).Add(time.Second))
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.RestartCount++
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: restarted}}
	}
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		d.log.Warn("demo: restart api pod", "err", err)
	}
}

// relabelAppSettings edits only labels of healthy/app-settings, as its data owner.
func relabelAppSettings(ctx context.Context, d *Demo) {
	secrets := d.Core().CoreV1().Secrets("healthy")
	flipsEvery(ctx, 4*time.Second, func(n int) {
		s, err := secrets.Get(ctx, "app-settings", metav1.GetOptions{})
		if err != nil {
			d.log.Warn("demo: get app-settings", "err", err)
			return
		}
		s = s.DeepCopy()
		s.Labels = map[string]string{"helm.sh/chart": "app-1.0." + itoa(n)}
		// helm owns data and labels: its managedFields time moves with a label-only
		// edit, which must not count as a data change.
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: flipsHelmManager}); err != nil {
			d.log.Warn("demo: relabel app-settings", "err", err)
		}
	})
}

func flipsSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
