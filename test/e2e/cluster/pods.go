package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MarkPodsRunning gives every pod matching selector in ns (waiting up to two
// minutes until there are at least want) the status a kubelet would write
// once its containers started now: phase Running, Ready, init containers
// terminated with 0, containers running since now. There is no kubelet on
// this stack. It returns the pods' names.
func (c *Cluster) MarkPodsRunning(t testing.TB, ns, selector string, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := c.Client.CoreV1().Pods(ns)
	var names []string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		names = names[:0]
		if err == nil {
			for _, p := range l.Items {
				names = append(names, p.Name)
			}
		}
		if len(names) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %d pod(s) %s in %s: %d after 2m (last error: %v)", want, selector, ns, len(names), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	started := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	for _, name := range names {
		for attempt := 0; ; attempt++ {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			yes := true
			p.Status.Phase = corev1.PodRunning
			p.Status.StartTime = &started
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			}
			p.Status.InitContainerStatuses = nil
			for _, ic := range p.Spec.InitContainers {
				p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
					Name: ic.Name, Image: ic.Image, ImageID: ic.Image + "@sha256:0",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started}},
				})
			}
			p.Status.ContainerStatuses = nil
			for _, ctr := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image + "@sha256:0", Ready: true, Started: &yes,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				})
			}
			_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) || attempt > 5 {
				t.Fatalf("set pod %s/%s Running: %v", ns, name, err)
			}
		}
	}
	return append([]string(nil), names...)
}
