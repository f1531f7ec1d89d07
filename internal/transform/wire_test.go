package transform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
)

// The wire path is proven equal to the typed path: every object below is
// encoded as the apiserver does (protobuf, runtime.Unknown envelope), then
// decoded both ways — the scheme's typed decoder followed by the transform,
// and the wire decoder — and the records must be identical.

var pbSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func encodePB(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	obj = obj.DeepCopyObject()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	if err := pbSerializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// typedRecord is the typed path: decode, then transform.
func typedRecord(t testing.TB, tr *Transformer, data []byte) (runtime.Object, error) {
	obj, _, err := pbSerializer.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	var out any
	switch o := obj.(type) {
	case *corev1.Secret:
		out, err = tr.Secret(o)
	case *corev1.Pod:
		out, err = tr.Pod(o)
	case *corev1.SecretList, *corev1.PodList:
		l := &recordList{}
		items := reflect.ValueOf(o).Elem().FieldByName("Items")
		l.ListMeta = *reflect.ValueOf(o).Elem().FieldByName("ListMeta").Addr().Interface().(*metav1.ListMeta)
		for i := 0; i < items.Len(); i++ {
			r, err := typedRecord1(tr, items.Index(i).Addr().Interface())
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, r)
		}
		return l, nil
	default:
		return nil, fmt.Errorf("unexpected %T", obj)
	}
	if err != nil {
		return nil, err
	}
	return out.(runtime.Object), nil
}

func typedRecord1(tr *Transformer, obj any) (runtime.Object, error) {
	var out any
	var err error
	switch o := obj.(type) {
	case *corev1.Secret:
		out, err = tr.Secret(o)
	case *corev1.Pod:
		out, err = tr.Pod(o)
	}
	if err != nil {
		return nil, err
	}
	return out.(runtime.Object), nil
}

func wireDecoderFor(tr *Transformer, kind *wireKind) *wireDecoder {
	tf := tr.Secret
	if kind == wirePods {
		tf = tr.Pod
	}
	return &wireDecoder{t: tr, kind: kind, typed: scheme.Codecs.UniversalDeserializer(), ct: runtime.ContentTypeProtobuf, tf: tf}
}

var normalise = normaliseRecord

func assertSameRecord(t *testing.T, what string, typed, wire runtime.Object) {
	t.Helper()
	a, b := normalise(typed), normalise(wire)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: wire record differs from the typed one\ntyped: %s\nwire:  %s", what, dump(a), dump(b))
	}
}

func dump(o runtime.Object) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// checkBothWays decodes data both ways and compares; wantWire: the wire
// decoder must take it (no fallback).
func checkBothWays(t *testing.T, what string, kind *wireKind, data []byte) {
	t.Helper()
	tr := newTransformer()
	typed, err := typedRecord(t, tr, slices.Clone(data))
	if err != nil {
		t.Fatalf("%s: typed: %v", what, err)
	}
	in := slices.Clone(data)
	d := wireDecoderFor(tr, kind)
	wire, _, err := d.Decode(in, nil, nil)
	if err != nil {
		t.Fatalf("%s: wire: %v", what, err)
	}
	if fb := tr.WireFallbacks(); len(fb) > 0 {
		t.Fatalf("%s: the wire decoder fell back: %v", what, fb)
	}
	// No record aliases the response: overwrite it, the records must not change.
	for i := range in {
		in[i] = 0xA5
	}
	assertSameRecord(t, what, typed, wire)
}

var (
	wireNames = []string{"db", "api-token", "a", "tls-cert", "cfg.yaml", "x-y_z.1", "dup"}
	wireNS    = []string{"app", "kube-system", "team-a"}
	wireKeys  = []string{"password", "token", "tls.crt", "tls.key", "config.yaml", "dup", "PROBE", ""}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func randTime(r *rand.Rand) metav1.Time {
	if r.IntN(4) == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(1_600_000_000+r.Int64N(200_000_000), 0))
}

func randPtrBool(r *rand.Rand) *bool {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		b := true
		return &b
	}
	b := false
	return &b
}

func randValue(r *rand.Rand) []byte {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return []byte(" padded value \r\n")
	}
	b := make([]byte, r.IntN(80))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

var managers = []string{"kubectl-client-side-apply", "kubectl", "helm", "argocd-controller", "external-secrets", "kube-controller-manager"}

func randManagedFields(r *rand.Rand, dataField string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for i := r.IntN(4); i > 0; i-- {
		fields := []string{`{"f:metadata":{"f:labels":{}}}`,
			`{"f:` + dataField + `":{"f:password":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`,
			`{"f:` + dataField + `":{}}`, `{"f:type":{}}`, `not json`, `[]`}
		e := metav1.ManagedFieldsEntry{Manager: pick(r, managers), Operation: pick(r, []metav1.ManagedFieldsOperationType{"Apply", "Update", ""}),
			APIVersion: "v1", FieldsType: pick(r, []string{"FieldsV1", "", "FieldsV2"}), Subresource: pick(r, []string{"", "", "status"})}
		if tm := randTime(r); !tm.IsZero() {
			e.Time = &tm
		}
		if r.IntN(6) > 0 {
			e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(pick(r, fields))}
		}
		out = append(out, e)
	}
	return out
}

func randMeta(r *rand.Rand, i int, pod bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", pick(r, wireNames), i), Namespace: pick(r, wireNS),
		UID: types.UID("uid-" + fmt.Sprint(r.IntN(1000))), ResourceVersion: fmt.Sprint(r.IntN(100000)), CreationTimestamp: randTime(r),
		GenerateName: "gen-", Generation: int64(r.IntN(5)), Finalizers: []string{"f"}}
	if r.IntN(2) == 0 {
		m.Annotations = map[string]string{}
		for _, k := range []string{model.AnnExpectedKeys, model.AnnCompareWith, model.AnnIgnore, model.AnnAWSRoleARN, "other/annotation",
			"reloader.stakater.com/auto", "secret.reloader.stakater.com/reload", "wave.pusher.com/update-on-config-change",
			flux.AnnotationSSA, flux.AnnotationReconcile} {
			if r.IntN(3) == 0 {
				v := pick(r, []string{"password,token", "a,,b", "all", "", "db", string(bytes.Repeat([]byte("k,"), 3000))})
				m.Annotations[k] = v
			}
		}
	}
	if r.IntN(2) == 0 {
		m.Labels = map[string]string{model.LabelESOManaged: "true", "app": "x"}
		// kustomize-controller's skip selectors, kept as labels too.
		if r.IntN(3) == 0 {
			m.Labels[flux.AnnotationSSA] = pick(r, []string{"IfNotPresent", "ignore", ""})
		}
		if r.IntN(3) == 0 {
			m.Labels[flux.AnnotationReconcile] = pick(r, []string{"disabled", "Disabled"})
		}
		if pod && r.IntN(2) == 0 {
			m.Labels["pod-template-hash"] = "abc12"
		}
		if pod && r.IntN(3) == 0 {
			m.Labels["rollouts-pod-template-hash"] = "r123"
		}
	}
	for j := r.IntN(3); j > 0; j-- {
		kind := pick(r, []string{"ReplicaSet", "Job", "StatefulSet", "ExternalSecret"})
		name := pick(r, []string{"web-abc12", "web-r123", "nightly-29000000", "db", "job-1"})
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name,
			UID: "o-uid", Controller: randPtrBool(r), BlockOwnerDeletion: randPtrBool(r)})
	}
	if r.IntN(5) == 0 {
		dt := metav1.NewTime(time.Unix(1_700_000_000, 0))
		m.DeletionTimestamp = &dt
	}
	return m
}

func randSecret(r *rand.Rand, i int) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: randMeta(r, i, false), Type: corev1.SecretType(pick(r, []string{"Opaque", "", "kubernetes.io/tls"}))}
	s.ManagedFields = randManagedFields(r, "data")
	if r.IntN(6) > 0 {
		s.Data = map[string][]byte{}
		for j := r.IntN(6); j > 0; j-- {
			s.Data[pick(r, wireKeys)] = randValue(r)
		}
	}
	if r.IntN(5) == 0 {
		s.StringData = map[string]string{pick(r, wireKeys): string(randValue(r))}
	}
	if r.IntN(3) == 0 {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = base64.StdEncoding.EncodeToString(v)
		}
		la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace}, "data": data})
		s.Annotations[model.AnnLastApplied] = pick(r, []string{string(la), "{not json", ""})
	}
	return s
}

func randContainer(r *rand.Rand, vols []corev1.Volume) corev1.Container {
	c := corev1.Container{Name: pick(r, []string{"app", "sidecar", "init", "app"}), Image: "img:1",
		Command: []string{"run"}, Ports: []corev1.ContainerPort{{ContainerPort: 80}}}
	for j := r.IntN(5); j > 0; j-- {
		e := corev1.EnvVar{Name: "E", Value: "v"}
		switch r.IntN(4) {
		case 0:
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: pick(r, wireNames)}, Key: pick(r, wireKeys), Optional: randPtrBool(r)}}
		case 1:
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}
		case 2:
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
		}
		c.Env = append(c.Env, e)
	}
	for j := r.IntN(3); j > 0; j-- {
		if r.IntN(2) == 0 {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{Prefix: "P", SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: pick(r, wireNames)}, Optional: randPtrBool(r)}})
		} else {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{}})
		}
	}
	for j := r.IntN(4); j > 0 && len(vols) > 0; j-- {
		m := corev1.VolumeMount{Name: pick(r, vols).Name, MountPath: "/m"}
		switch r.IntN(4) {
		case 0:
			m.SubPath = "sub"
		case 1:
			m.SubPathExpr = "$(X)"
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
	return c
}

func randItems(r *rand.Rand) []corev1.KeyToPath {
	var out []corev1.KeyToPath
	for j := r.IntN(3); j > 0; j-- {
		out = append(out, corev1.KeyToPath{Key: pick(r, wireKeys), Path: "p"})
	}
	return out
}

func randPod(r *rand.Rand, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: randMeta(r, i, true)}
	p.ManagedFields = randManagedFields(r, "spec")
	for j := r.IntN(5); j > 0; j-- {
		v := corev1.Volume{Name: pick(r, []string{"v1", "v2", "v3", "v1"})}
		switch r.IntN(4) {
		case 0:
			v.Secret = &corev1.SecretVolumeSource{SecretName: pick(r, wireNames), Items: randItems(r), Optional: randPtrBool(r)}
		case 1:
			var srcs []corev1.VolumeProjection
			for k := r.IntN(3); k > 0; k-- {
				if r.IntN(3) > 0 {
					srcs = append(srcs, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: pick(r, wireNames)}, Items: randItems(r), Optional: randPtrBool(r)}})
				} else {
					srcs = append(srcs, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{}})
				}
			}
			v.Projected = &corev1.ProjectedVolumeSource{Sources: srcs}
		case 2:
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v)
	}
	for j := r.IntN(2); j > 0; j-- {
		p.Spec.InitContainers = append(p.Spec.InitContainers, randContainer(r, p.Spec.Volumes))
	}
	for j := 1 + r.IntN(2); j > 0; j-- {
		p.Spec.Containers = append(p.Spec.Containers, randContainer(r, p.Spec.Volumes))
	}
	if r.IntN(4) == 0 {
		c := randContainer(r, p.Spec.Volumes)
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts},
			TargetContainerName:      "app"})
	}
	p.Spec.ServiceAccountName = pick(r, []string{"", "default", "app-sa"})
	p.Spec.NodeSelector = map[string]string{"a": "b"}
	// imagePullSecrets: readers (ViaImagePull), deduplicated, empty names
	// skipped; names shared with the other references and repeated.
	for j := r.IntN(4); j > 0; j-- {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: pick(r, append([]string{"", "regcred"}, wireNames...))})
	}
	p.Status.Phase = corev1.PodPhase(pick(r, []string{"", "Pending", "Running"}))
	if tm := randTime(r); !tm.IsZero() {
		p.Status.StartTime = &tm
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if r.IntN(3) == 0 {
			continue
		}
		cs := corev1.ContainerStatus{Name: c.Name, Image: "img", RestartCount: 2}
		switch r.IntN(3) {
		case 0:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: randTime(r)}
		case 1:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		if r.IntN(2) == 0 {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		} else {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs)
		}
	}
	if len(p.Spec.EphemeralContainers) > 0 {
		p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: randTime(r)}}}}
	}
	return p
}

func TestWireSecretsEqualTyped(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var list corev1.SecretList
	for i := 0; i < 2000; i++ {
		s := randSecret(r, i)
		checkBothWays(t, fmt.Sprintf("secret %d", i), wireSecrets, encodePB(t, s))
		list.Items = append(list.Items, *s)
	}
	list.ResourceVersion, list.Continue = "123", "next"
	checkBothWays(t, "secret list", wireSecrets, encodePB(t, &list))
}

func TestWirePodsEqualTyped(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var list corev1.PodList
	for i := 0; i < 2000; i++ {
		p := randPod(r, i)
		checkBothWays(t, fmt.Sprintf("pod %d", i), wirePods, encodePB(t, p))
		list.Items = append(list.Items, *p)
	}
	list.ResourceVersion = "456"
	checkBothWays(t, "pod list", wirePods, encodePB(t, &list))
}

// The bookmark that ends a watch-list keeps its annotation (the reflector
// reads it), on both paths.
func TestWireBookmarkKeepsInitialEventsEnd(t *testing.T) {
	for _, c := range []struct {
		kind *wireKind
		obj  runtime.Object
	}{
		{wireSecrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		{wirePods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
	} {
		tr := newTransformer()
		d := wireDecoderFor(tr, c.kind)
		for _, data := range [][]byte{encodePB(t, c.obj), mustJSON(t, c.obj)} {
			obj, _, err := d.Decode(data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := obj.(metav1.Object)
			if !ok || m.GetResourceVersion() != "99" || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("%s bookmark: %#v", c.kind.kind, obj)
			}
		}
	}
}

func mustJSON(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(obj).Elem().Name()))
	if err := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Anything unexpected is decoded by the typed path, counted and reduced to
// the same record: a JSON response, another kind, a message the wire decoder
// rejects. A Status is returned as is, uncounted.
func TestWireFallsBackToTyped(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := randSecret(r, 1)
	s.StringData = map[string]string{"token": "valid UTF-8"} // JSON strings cannot carry other bytes
	s.ManagedFields = randManagedFields(r, "data")
	for i := range s.ManagedFields {
		s.ManagedFields[i].FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)} // JSON must hold JSON
	}
	tr := newTransformer()
	want, err := typedRecord(t, tr, encodePB(t, s.DeepCopy()))
	if err != nil {
		t.Fatal(err)
	}
	d := wireDecoderFor(tr, wireSecrets)

	got, _, err := d.Decode(mustJSON(t, s.DeepCopy()), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertSameRecord(t, "JSON", want, got)

	// A singular message repeated: the typed decoder merges, the wire one
	// falls back.
	data := encodePB(t, s.DeepCopy())
	unk := runtime.Unknown{}
	if err := unk.Unmarshal(data[4:]); err != nil {
		t.Fatal(err)
	}
	unk.Raw = append(unk.Raw, 0x0a, 0x02, 0x0a, 0x00) // metadata { name: "" } again
	raw, _ := unk.Marshal()
	merged := append(append([]byte{}, protobufPrefix...), raw...)
	wantMerged, err := typedRecord(t, tr, merged)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = d.Decode(merged, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertSameRecord(t, "repeated metadata", wantMerged, got)

	// A Pod where Secrets are expected: decoded typed, reduced by nothing.
	pd := wireDecoderFor(tr, wireSecrets)
	pod := encodePB(t, randPod(r, 2))
	obj, _, err := pd.Decode(pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*corev1.Pod); !ok {
		t.Fatalf("other kind: %T", obj)
	}

	st := encodePB(t, &metav1.Status{Status: metav1.StatusFailure, Message: "gone", Reason: metav1.StatusReasonGone, Code: 410})
	obj, _, err = d.Decode(st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := obj.(*metav1.Status); !ok || s.Code != 410 {
		t.Fatalf("status: %#v", obj)
	}
	fb := tr.WireFallbacks()
	wantFB := map[[2]string]uint64{{"secrets", fallbackContentType}: 1, {"secrets", fallbackDecode}: 1, {"secrets", fallbackKind}: 1}
	if !reflect.DeepEqual(fb, wantFB) {
		t.Fatalf("fallbacks %v, want %v", fb, wantFB)
	}
}

// The values a Secret response carries are wiped once decoded, and never
// reach a record.
func TestWireWipesValues(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"},
		Data: map[string][]byte{"password": []byte(secretValues[0]), "key": []byte(secretValues[2])}}
	la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(secretValues[1]))}})
	s.Annotations = map[string]string{model.AnnLastApplied: string(la)}
	data := encodePB(t, s)
	tr := newTransformer()
	rec, _, err := wireDecoderFor(tr, wireSecrets).Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertNoValues(t, "wire record", rec)
	for _, v := range secretValues[:3] {
		if bytes.Contains(data, []byte(v)) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(v)))) {
			t.Fatalf("value %q still in the response buffer after decoding", v[:8])
		}
	}
}

// imagePullSecrets are readers (ViaImagePull) on the wire path as on the
// typed one: in order, once per name, empty names skipped, beside the other
// uses of the same Secret.
func TestWirePodImagePullSecrets(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "app"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "regcred"}, Key: "k"}}}}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}, {Name: ""}, {Name: "mirror"}, {Name: "regcred"}},
		}}
	data := encodePB(t, p)
	checkBothWays(t, "pull secrets", wirePods, data)
	tr := newTransformer()
	rec, _, err := wireDecoderFor(tr, wirePods).Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range rec.(*model.Pod).Uses {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s", u.Via, u.Secret, u.Key, u.Container))
	}
	want := []string{
		fmt.Sprintf("%s/regcred/k/app", model.ViaEnv),
		fmt.Sprintf("%s/regcred//", model.ViaImagePull),
		fmt.Sprintf("%s/mirror//", model.ViaImagePull),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("uses %q, want %q", got, want)
	}
}

// A scratch going back to the pool holds no view of the response it decoded
// (it would keep the buffer alive): no string or byte slice of it, up to the
// capacity of its slices, points into the buffer.
func TestWireScratchReleaseKeepsNoView(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	sc := new(wireScratch)
	tr := newTransformer()
	for i := 0; i < 50; i++ {
		p := randPod(r, i)
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: "regcred"})
		pb, _ := p.Marshal()
		if _, err := tr.podFromWire(pb, sc); err != nil {
			t.Fatal(err)
		}
		sb, _ := randSecret(r, i).Marshal()
		if _, err := tr.secretFromWire(sb, sc); err != nil {
			t.Fatal(err)
		}
		sc.release()
		for _, buf := range [][]byte{pb, sb} {
			if path := viewInto(reflect.ValueOf(sc).Elem(), buf, "scratch"); path != "" {
				t.Fatalf("object %d: after release, %s still points into the response", i, path)
			}
		}
	}
}

// viewInto returns the path of a string or byte slice reachable from v (slices
// walked up to their capacity) that points into buf, or "".
func viewInto(v reflect.Value, buf []byte, path string) string {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	hi := lo + uintptr(len(buf))
	in := func(p uintptr) bool { return p >= lo && p < hi }
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 && in(uintptr(unsafe.Pointer(unsafe.StringData(v.String())))) {
			return path
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Cap() > 0 && in(v.Pointer()) {
				return path
			}
			return ""
		}
		full := v.Slice(0, v.Cap())
		for i := 0; i < full.Len(); i++ {
			if p := viewInto(full.Index(i), buf, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if p := viewInto(v.Index(i), buf, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if p := viewInto(v.Field(i), buf, path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return viewInto(v.Elem(), buf, path)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := viewInto(it.Key(), buf, path+"{key}"); p != "" {
				return p
			}
			if p := viewInto(it.Value(), buf, path+"{"+fmt.Sprint(it.Key())+"}"); p != "" {
				return p
			}
		}
	}
	return ""
}
