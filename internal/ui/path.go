package ui

import (
	"slices"
	"sort"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// Path is the delivery path of one Secret, value-free: where its keys come
// from (stores and ExternalSecrets, and the Helm release or Argo CD
// Application that state what it should hold), the Secret itself (key names
// only), and the workloads that read it. Broken links and missing keys come
// from the findings about the Secret, so the picture never says more than the
// detectors.
type Path struct {
	Namespace, Name string
	// Exists is false when the Secret is absent.
	Exists bool
	Type   string
	// Keys are the key names the Secret holds.
	Keys []string
	// Writers are the field managers that wrote its data (managedFields).
	Writers []string
	// Missing are the keys findings report missing, each with the sources
	// that expect it.
	Missing []MissingKey
	// Absent is set when a finding reports the Secret absent.
	Absent bool

	Stores          []StoreNode
	ExternalSecrets []ESNode
	Expectations    []ExpectNode
	Workloads       []WorkloadNode
}

// MissingKey is a key a finding reports missing.
type MissingKey struct {
	Key      string
	Sources  []string
	Optional bool
}

// StoreNode is a SecretStore or ClusterSecretStore an ExternalSecret of the
// Secret reads from.
type StoreNode struct {
	Kind, Namespace, Name string
	Provider              string
	Found                 bool
	Ready                 string // True, False, Unknown, "" when unknown
	Reason                string
	Broken                bool
}

// ESNode is an ExternalSecret that writes the Secret.
type ESNode struct {
	Name           string
	StoreKind      string
	StoreName      string
	Ready          string
	Reason         string
	CreationPolicy string
	Expected       []string
	// Broken: a finding says the ExternalSecret does not deliver (not ready,
	// overdue, ready but short, a key it renders is missing).
	Broken bool
	// Findings are the short names of the families reported about it.
	Findings []string
}

// ExpectNode is another source of an expectation: a Helm release, an Argo CD
// Application, or the driftwatch.io/expected-keys annotation.
type ExpectNode struct {
	Kind string // HelmRelease, Application
	Name string
	Keys []string
	// Broken: a missing-key finding names this source.
	Broken bool
}

// WorkloadNode is a workload whose running pods read the Secret.
type WorkloadNode struct {
	Kind, Name string
	Pods       int
	// Keys are the key names its pods read by name ("" entries dropped);
	// Whole is set when a pod reads the whole Secret (envFrom, a volume).
	Keys  []string
	Whole bool
	Via   []string
	// Broken: it reads a missing key, or the Secret is absent.
	Broken bool
	// MissingKeys are the missing keys it reads.
	MissingKeys []string
}

// secretOfFinding names the Secret whose delivery path a finding is about,
// when there is one.
func buildPath(v model.View, ns, name string, fs []finding.Finding) Path {
	p := Path{Namespace: ns, Name: name}
	if s, ok := v.Secret(ns, name); ok {
		p.Exists = true
		p.Type = s.Type
		p.Keys = s.Keys.Names()
		for _, m := range s.Managers {
			if m.OwnsData && !slices.Contains(p.Writers, m.Manager) {
				p.Writers = append(p.Writers, m.Manager)
			}
		}
	}
	// What the findings say about this Secret and its ExternalSecrets.
	missing := map[string]*MissingKey{}
	esFindings := map[string][]string{}
	storeBroken := map[[3]string]bool{}
	for _, f := range fs {
		switch f.Object.Kind {
		case "Secret":
			if f.Object.Namespace != ns || f.Object.Name != name {
				continue
			}
			switch f.Family.Path {
			case finding.PathMissingKey:
				k := f.Labels["key"]
				mk := missing[k]
				if mk == nil {
					mk = &MissingKey{Key: k, Optional: true}
					missing[k] = mk
				}
				if src := f.Labels["source"]; !slices.Contains(mk.Sources, src) {
					mk.Sources = append(mk.Sources, src)
				}
				if f.Labels["optional"] != "true" {
					mk.Optional = false
				}
			case finding.PathAbsent:
				p.Absent = true
			}
		case "ExternalSecret":
			if f.Object.Namespace == ns {
				esFindings[f.Object.Name] = append(esFindings[f.Object.Name], shortName(f.Family.Name))
			}
		case "SecretStore", "ClusterSecretStore":
			storeBroken[[3]string{f.Object.Kind, f.Object.Namespace, f.Object.Name}] = true
		}
	}
	for _, mk := range missing {
		sort.Strings(mk.Sources)
		p.Missing = append(p.Missing, *mk)
	}
	sort.Slice(p.Missing, func(i, j int) bool { return p.Missing[i].Key < p.Missing[j].Key })
	missingFrom := func(source string) bool {
		for _, mk := range p.Missing {
			if slices.Contains(mk.Sources, source) {
				return true
			}
		}
		return false
	}

	seenStore := map[[3]string]bool{}
	for _, e := range v.ExternalSecretsTargeting(ns, name) {
		n := ESNode{Name: e.Name, StoreKind: e.StoreKind, StoreName: e.StoreName, Ready: e.Ready.Status,
			Reason: e.Ready.Reason, CreationPolicy: e.CreationPolicy, Expected: e.WrittenKeys(),
			Findings: esFindings[e.Name]}
		n.Broken = len(n.Findings) > 0 || missingFrom("externalsecret")
		p.ExternalSecrets = append(p.ExternalSecrets, n)
		kind := e.StoreKind
		if kind == "" {
			kind = "SecretStore"
		}
		sns := ns
		if kind == "ClusterSecretStore" {
			sns = ""
		}
		key := [3]string{kind, sns, e.StoreName}
		if e.StoreName == "" || seenStore[key] {
			continue
		}
		seenStore[key] = true
		sn := StoreNode{Kind: kind, Namespace: sns, Name: e.StoreName, Broken: storeBroken[key]}
		if st, ok := v.Store(kind, ns, e.StoreName); ok {
			sn.Found, sn.Provider, sn.Ready, sn.Reason = true, st.Provider, st.Ready.Status, st.Ready.Reason
		}
		p.Stores = append(p.Stores, sn)
	}

	// Helm releases and GitOps sync objects (Argo CD Applications) that state
	// the Secret's keys, through a Secret or an ExternalSecret writing it.
	for _, h := range v.DeployedReleases() {
		for _, x := range h.Expectations {
			if x.Namespace == "" {
				x.Namespace = h.Namespace
			}
			t, ok := detect.DesiredTarget(v, &x)
			if ok && t.Namespace == ns && t.Secret == name {
				p.Expectations = append(p.Expectations, ExpectNode{Kind: "HelmRelease",
					Name: h.Release + " (rev " + itoa(h.Revision) + ")", Keys: t.Keys, Broken: missingFrom("helm")})
			}
		}
	}
	for _, d := range detect.GitOpsDesired(v) {
		t, ok := detect.DesiredTarget(v, &d.Object)
		if !ok || t.Namespace != ns || t.Secret != name || d.Delivery == detect.Unjudged {
			continue
		}
		n := ExpectNode{Kind: d.Sync.Kind, Name: d.Sync.Namespace + "/" + d.Sync.Name, Keys: t.Keys,
			Broken: d.Delivery == detect.Delivered && missingFrom(string(d.Source))}
		if d.Delivery == detect.Pending {
			n.Name += " (sync pending)"
		}
		p.Expectations = append(p.Expectations, n)
	}

	// Workloads, from the pods that read the Secret.
	idx := map[[2]string]int{}
	for _, pod := range v.PodsUsing(ns, name) {
		if !detect.PodActive(pod) {
			continue
		}
		k := [2]string{pod.Workload.Kind, pod.Workload.Name}
		i, ok := idx[k]
		if !ok {
			i = len(p.Workloads)
			idx[k] = i
			p.Workloads = append(p.Workloads, WorkloadNode{Kind: k[0], Name: k[1]})
		}
		w := &p.Workloads[i]
		w.Pods++
		for _, u := range pod.Uses {
			if u.Secret != name {
				continue
			}
			switch {
			case u.Via == model.ViaImagePull:
				// The kubelet reads it to pull images: no key reaches a container.
			case u.Key == "":
				w.Whole = true
			case !slices.Contains(w.Keys, u.Key):
				w.Keys = append(w.Keys, u.Key)
			}
			if !slices.Contains(w.Via, string(u.Via)) {
				w.Via = append(w.Via, string(u.Via))
			}
		}
	}
	for i := range p.Workloads {
		w := &p.Workloads[i]
		sort.Strings(w.Keys)
		sort.Strings(w.Via)
		for _, mk := range p.Missing {
			if slices.Contains(w.Keys, mk.Key) {
				w.MissingKeys = append(w.MissingKeys, mk.Key)
			}
		}
		w.Broken = len(w.MissingKeys) > 0 || p.Absent || !p.Exists
	}
	sort.Slice(p.Workloads, func(i, j int) bool {
		a, b := p.Workloads[i], p.Workloads[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return p
}

// secretsOf names the Secrets whose delivery path a finding is about (at most
// max): the Secret itself, an ExternalSecret's target, the targets of a
// store's ExternalSecrets, the Secrets an Application declares.
func secretsOf(v model.View, f finding.Finding, max int) []model.Ref {
	o := f.Object
	switch o.Kind {
	case "Secret":
		return []model.Ref{{Namespace: o.Namespace, Name: o.Name}}
	case "ExternalSecret":
		if s := f.Labels["secret"]; s != "" {
			return []model.Ref{{Namespace: o.Namespace, Name: s}}
		}
		if e, ok := v.ExternalSecret(o.Namespace, o.Name); ok && e.Target != "" {
			return []model.Ref{{Namespace: o.Namespace, Name: e.Target}}
		}
	case "SecretStore", "ClusterSecretStore":
		var out []model.Ref
		for _, e := range v.ExternalSecrets() {
			kind := e.StoreKind
			if kind == "" {
				kind = "SecretStore"
			}
			if kind != o.Kind || e.StoreName != o.Name || (kind == "SecretStore" && e.Namespace != o.Namespace) {
				continue
			}
			r := model.Ref{Namespace: e.Namespace, Name: e.Target}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
			if len(out) == max {
				break
			}
		}
		return out
	case "Application":
		var out []model.Ref
		for _, d := range v.ArgoDesiredAll() {
			if d.Source.Namespace != o.Namespace || d.Source.Name != o.Name || d.Kind != "Secret" {
				continue
			}
			out = append(out, model.Ref{Namespace: d.Namespace, Name: d.Name})
			if len(out) == max {
				break
			}
		}
		return out
	}
	return nil
}
