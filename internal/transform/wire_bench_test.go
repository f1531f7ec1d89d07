package transform

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/model"
)

// BenchmarkWireDecode: a list response of 1,000 Secrets and one of 1,000 Pods
// shaped like test/bench's (as the apiserver stores them: managedFields,
// defaulted fields, a status), decoded by the bare typed decoder (the
// baseline's cost), the typed decoder followed by the transform (the agent
// before the wire decoder), and the wire decoder.

func benchSecretList() *corev1.SecretList {
	l := &corev1.SecretList{}
	ts := metav1.NewTime(time.Unix(1_700_000_000, 0))
	for i := 0; i < 1000; i++ {
		s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i), Namespace: fmt.Sprintf("ns-%03d", i%200),
			UID: "0e8d2c4a-6f1b-4c57-9a0e-3f6b2d1c8e7a", ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: ts,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: "Update", APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:k0":{},"f:k1":{},"f:k2":{},"f:k3":{},"f:k4":{}},"f:type":{}}`)}}}},
			Type: "Opaque", Data: map[string][]byte{}}
		for k := 0; k < 5; k++ {
			v := make([]byte, 64)
			for j := range v {
				v[j] = byte('a' + (i+j+k)%26)
			}
			s.Data[fmt.Sprintf("k%d", k)] = v
		}
		if i%5 == 0 {
			data := map[string]string{}
			for k, v := range s.Data {
				data[k] = base64.StdEncoding.EncodeToString(v)
			}
			la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": s.Name, "namespace": s.Namespace}, "data": data, "type": "Opaque"})
			s.Annotations = map[string]string{model.AnnLastApplied: string(la)}
		}
		l.Items = append(l.Items, s)
	}
	return l
}

func benchPodList() *corev1.PodList {
	l := &corev1.PodList{}
	ts := metav1.NewTime(time.Unix(1_700_000_000, 0))
	opt := true
	grace := int64(30)
	for i := 0; i < 1000; i++ {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: fmt.Sprintf("ns-%03d", i%200),
				UID: "0e8d2c4a-6f1b-4c57-9a0e-3f6b2d1c8e7a", ResourceVersion: fmt.Sprint(200000 + i), CreationTimestamp: ts,
				Labels:      map[string]string{"app": fmt.Sprintf("web-%d", i%50), "pod-template-hash": "5d8f9c7b6d"},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: "Update", APIVersion: "v1", Time: &ts, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"API_TOKEN\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:secretKeyRef":{}}}},"f:image":{},"f:name":{}}},"f:volumes":{}}}`)}}}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/team/app:1.2.3",
					Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http", Protocol: "TCP"}},
					Env: []corev1.EnvVar{
						{Name: "LOG_LEVEL", Value: "info"},
						{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("app-%05d", i)}, Key: "k1", Optional: &opt}}},
						{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("app-%05d", i+1)}, Key: "k0"}}},
					},
					EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("app-%05d", i+2)}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}, {Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: apiresource.MustParse("100m"), corev1.ResourceMemory: apiresource.MustParse("128Mi")}},
					TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ImagePullPolicy: "IfNotPresent",
				}},
				Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("app-%05d", i+3)}}},
					{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &grace}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}},
				RestartPolicy: "Always", TerminationGracePeriodSeconds: &grace, DNSPolicy: "ClusterFirst", ServiceAccountName: "default",
				SchedulerName: "default-scheduler", Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &grace}},
			},
			Status: corev1.PodStatus{Phase: "Pending", QOSClass: "Burstable"},
		}
		l.Items = append(l.Items, p)
	}
	return l
}

// cpuNow is the process's CPU time (user+sys, GC included): on a shared
// machine its ratio between variants means more than wall time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkWireDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		kind *wireKind
		obj  runtime.Object
	}{{"secrets", wireSecrets, benchSecretList()}, {"pods", wirePods, benchPodList()}} {
		data := encodePB(b, c.obj)
		b.Run(c.name+"/typed", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			defer reportCPU(b, cpuNow())
			for i := 0; i < b.N; i++ {
				if _, _, err := pbSerializer.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/typed+transform", func(b *testing.B) {
			tr := newTransformer()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			defer reportCPU(b, cpuNow())
			for i := 0; i < b.N; i++ {
				if _, err := typedRecord(b, tr, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/wire", func(b *testing.B) {
			tr := newTransformer()
			d := wireDecoderFor(tr, c.kind)
			in := make([]byte, len(data))
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			defer reportCPU(b, cpuNow())
			for i := 0; i < b.N; i++ {
				copy(in, data) // the decoder wipes the values it read
				if _, _, err := d.Decode(in, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
