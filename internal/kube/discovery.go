package kube

// Discovery of the optional APIs (CRDs): their informers start when the API
// is served and stop only when two rounds in a row say definitely that it
// is not.

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/model"
)

// optionalAPIs are the watched resources served by CRDs, discovered at run time.
func optionalAPIs() []*resource {
	var out []*resource
	for _, r := range resources {
		if r.optional() {
			out = append(out, r)
		}
	}
	return out
}

// discover starts informers for optional APIs that became served and stops those
// whose API disappeared. A discovery error other than "not found" changes nothing.
func (m *Manager) discover(ctx context.Context) {
	if m.disco == nil || m.dyn == nil {
		m.markAbsentAll()
		return
	}
	served := map[string]map[string]bool{} // group/version → resource names
	known := map[string]bool{}             // group/versions with a definite answer
	for _, api := range optionalAPIs() {
		for _, v := range api.versions {
			gv := api.group + "/" + v
			if _, done := known[gv]; done {
				continue
			}
			list, err := m.disco.ServerResourcesForGroupVersion(gv)
			switch {
			case err == nil:
				known[gv] = true
				served[gv] = map[string]bool{}
				for _, r := range list.APIResources {
					served[gv][r.Name] = true
				}
			case apierrors.IsNotFound(err):
				known[gv] = true
			default:
				m.log.Debug("discovery failed; keeping current state", "groupVersion", gv, "err", err)
			}
		}
	}
	for _, api := range optionalAPIs() {
		want := ""
		definite := true
		for _, v := range api.versions {
			gv := api.group + "/" + v
			if !known[gv] {
				definite = false
				break
			}
			if served[gv][api.resource] {
				want = v
				break
			}
		}
		if !definite {
			continue
		}
		m.mu.Lock()
		g := m.groups[api.res]
		m.mu.Unlock()
		cur := ""
		if g != nil && !g.absent {
			cur = g.version
		}
		if want != "" {
			want = api.group + "/" + want
		}
		if want == cur {
			if g == nil && want == "" {
				m.markAbsent(api.res)
			}
			if g != nil {
				g.vanishing = 0
			}
			continue
		}
		// A running informer whose API reads as not served is stopped only when
		// the next round says so too: a kube-apiserver that has just restarted
		// answers discovery before its CRDs are registered, and stopping then
		// would clear real findings until the next round brought them back.
		if want == "" && g != nil && g.cancel != nil {
			if g.vanishing++; g.vanishing < 2 {
				m.log.Debug("API not served; confirming at the next discovery", "resource", api.res)
				continue
			}
		}
		if g != nil && g.cancel != nil {
			g.cancel()
			<-g.done
			m.store.ClearResource(api.res)
		}
		if want == "" {
			m.log.Warn("API not served: detectors that need it are disabled", "resource", api.res, "group", api.group)
			m.markAbsent(api.res)
			continue
		}
		gvr := schema.GroupVersionResource{Group: api.group, Version: strings.TrimPrefix(want, api.group+"/"), Resource: api.resource}
		informer := m.crdInformers(api, gvr)
		if m.scoped(api) {
			tw := m.tweak("", "")
			m.startScopedGroup(ctx, api.res, want, func(ns string) cache.SharedIndexInformer {
				return informer(ns, tw)
			})
			continue
		}
		var infs []cache.SharedIndexInformer
		nss := m.namespaces()
		if api.clusterScoped {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			tw := m.tweak("", "")
			if api.clusterScoped {
				tw = func(*metav1.ListOptions) {}
			}
			infs = append(infs, informer(ns, tw))
		}
		m.startGroup(ctx, api.res, want, infs)
	}
}

// crdInformers makes the informers of a served custom resource: through the
// JSON reader (crdwire.go) when the resource has one and the agent has its
// REST connection (Options.Wire), else the dynamic informer.
func (m *Manager) crdInformers(api *resource, gvr schema.GroupVersionResource) func(ns string, tw func(*metav1.ListOptions)) cache.SharedIndexInformer {
	if m.opts.Wire != nil && api.exemplar != nil {
		gv := gvr.GroupVersion()
		if ser := m.tr.CRDSerializer(api.res, gv); ser != nil {
			c, err := newCRDClient(m.opts.Wire, gv, ser)
			if err == nil {
				return func(ns string, tw func(*metav1.ListOptions)) cache.SharedIndexInformer {
					return newWireInformer(c, gvr.Resource, ns, api.exemplar(), tw)
				}
			}
			m.log.Warn("JSON reader unavailable; the dynamic informer reads the resource", "resource", api.res, "err", err)
		}
	}
	return func(ns string, tw func(*metav1.ListOptions)) cache.SharedIndexInformer {
		return dynamicinformer.NewFilteredDynamicInformer(m.dyn, gvr, ns, 0, nil, tw).Informer()
	}
}

func (m *Manager) markAbsent(res model.Resource) {
	g := &group{res: res, absent: true}
	g.reason.Store("crd_absent")
	m.mu.Lock()
	m.groups[res] = g
	m.mu.Unlock()
}

func (m *Manager) markAbsentAll() {
	for _, api := range optionalAPIs() {
		m.mu.Lock()
		_, ok := m.groups[api.res]
		m.mu.Unlock()
		if !ok {
			m.markAbsent(api.res)
		}
	}
}
