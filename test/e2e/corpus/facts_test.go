package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// secretFacts describes a Secret without any value: its type, key names and
// byte lengths, labels, annotation names, the key names its last-applied
// annotation holds, and its managedFields (manager, operation, time, and the
// fields each entry owns, data keys by name).
func secretFacts(ctx context.Context, c *cluster.Cluster, ns, name string) string {
	s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("Secret %s/%s: absent", ns, name)
	}
	if err != nil {
		return fmt.Sprintf("Secret %s/%s: %v", ns, name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Secret %s/%s (type %s, uid ...%s, created %s)\n", ns, name, s.Type, tailOf(string(s.UID), 6), s.CreationTimestamp.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "    data keys: %s\n", dataKeys(s))
	fmt.Fprintf(&b, "    labels: %v\n", s.Labels)
	fmt.Fprintf(&b, "    annotations: %q\n", slices.Sorted(maps.Keys(s.Annotations)))
	if la, ok := s.Annotations[lastAppliedAnnotation]; ok {
		fmt.Fprintf(&b, "    last-applied: %s\n", lastAppliedKeys(la))
	}
	if len(s.OwnerReferences) > 0 {
		var owners []string
		for _, o := range s.OwnerReferences {
			owners = append(owners, o.Kind+"/"+o.Name)
		}
		fmt.Fprintf(&b, "    owners: %v\n", owners)
	}
	b.WriteString(managedFieldsFacts(s.ManagedFields))
	return strings.TrimRight(b.String(), "\n")
}

func dataKeys(s *corev1.Secret) string {
	keys := slices.Sorted(maps.Keys(s.Data))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s(%dB)", k, len(s.Data[k])))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// lastAppliedKeys names the data and stringData keys of a last-applied
// annotation (never its values).
func lastAppliedKeys(la string) string {
	var cfg struct {
		Data       map[string]any `json:"data"`
		StringData map[string]any `json:"stringData"`
		Metadata   struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(la), &cfg); err != nil {
		return fmt.Sprintf("(not JSON: %d bytes)", len(la))
	}
	return fmt.Sprintf("data keys %q, stringData keys %q, labels %q (%d bytes)",
		slices.Sorted(maps.Keys(cfg.Data)), slices.Sorted(maps.Keys(cfg.StringData)), slices.Sorted(maps.Keys(cfg.Metadata.Labels)), len(la))
}

// lastAppliedDataKeys returns the data and stringData key names of an
// object's last-applied annotation, and whether it has one.
func lastAppliedDataKeys(s *corev1.Secret) ([]string, bool) {
	la, ok := s.Annotations[lastAppliedAnnotation]
	if !ok {
		return nil, false
	}
	var cfg struct {
		Data       map[string]any `json:"data"`
		StringData map[string]any `json:"stringData"`
	}
	if err := json.Unmarshal([]byte(la), &cfg); err != nil {
		return nil, true
	}
	keys := slices.Collect(maps.Keys(cfg.Data))
	keys = append(keys, slices.Collect(maps.Keys(cfg.StringData))...)
	slices.Sort(keys)
	return slices.Compact(keys), true
}

func managedFieldsFacts(mf []metav1.ManagedFieldsEntry) string {
	var b strings.Builder
	for _, e := range mf {
		at := ""
		if e.Time != nil {
			at = e.Time.UTC().Format(time.RFC3339)
		}
		sub := ""
		if e.Subresource != "" {
			sub = "/" + e.Subresource
		}
		fmt.Fprintf(&b, "    managedFields: %s %s%s at %s: %s\n", e.Manager, e.Operation, sub, at, fieldsSummary(e.FieldsV1))
	}
	return b.String()
}

// fieldsSummary renders a FieldsV1 set as the top-level fields it owns, with
// the key names under data, metadata.labels and metadata.annotations.
func fieldsSummary(f *metav1.FieldsV1) string {
	if f == nil {
		return "(none)"
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(f.Raw, &m); err != nil {
		return fmt.Sprintf("(undecodable: %v)", err)
	}
	names := func(x map[string]any) []string {
		var out []string
		for k := range x {
			if k != "." {
				out = append(out, strings.TrimPrefix(k, "f:"))
			}
		}
		slices.Sort(out)
		return out
	}
	var parts []string
	for _, top := range slices.Sorted(maps.Keys(m)) {
		sub := m[top]
		name := strings.TrimPrefix(top, "f:")
		switch name {
		case "data", "stringData":
			parts = append(parts, fmt.Sprintf("%s%v", name, names(sub)))
		case "metadata":
			for _, mk := range slices.Sorted(maps.Keys(sub)) {
				mm, _ := sub[mk].(map[string]any)
				parts = append(parts, fmt.Sprintf("metadata.%s%v", strings.TrimPrefix(mk, "f:"), names(mm)))
			}
		default:
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, " ")
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
