package kube

// The Flux entries of the resources table.

import (
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/flux"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

// fluxResources are the Flux entries of the resources table. Kustomizations
// manage objects in any namespace (targetNamespace) and reference sources in
// others: like Argo CD Applications, every shard keeps every record.
func fluxResources() []*resource {
	keepAll := func(rec any, _ func(string) bool) any { return rec }
	out := []*resource{{res: model.ResKustomizations, group: flux.Group, versions: []string{flux.Version}, resource: "kustomizations",
		transform:      func(t *transform.Transformer) cache.TransformFunc { return t.Kustomization },
		crossNamespace: true, reduce: keepAll,
		upsert: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.FluxKustomization); ok {
				s.UpsertKustomization(o)
			}
		},
		remove: func(s *model.Store, obj any, _ time.Time) {
			if o, ok := obj.(*model.FluxKustomization); ok {
				s.DeleteKustomization(o.Namespace, o.Name)
			}
		}}}
	for _, src := range []struct {
		kind     string
		res      model.Resource
		resource string
	}{{"GitRepository", model.ResGitRepositories, "gitrepositories"}, {"OCIRepository", model.ResOCIRepositories, "ocirepositories"}, {"Bucket", model.ResBuckets, "buckets"},
		{"ExternalArtifact", model.ResExternalArtifacts, "externalartifacts"}} {
		kind := src.kind
		out = append(out, &resource{res: src.res, group: flux.SourceGroup, versions: []string{flux.SourceVersion}, resource: src.resource,
			transform:      func(t *transform.Transformer) cache.TransformFunc { return t.FluxSource(kind) },
			crossNamespace: true, reduce: keepAll,
			upsert: func(s *model.Store, obj any, _ time.Time) {
				if o, ok := obj.(*model.FluxSource); ok {
					s.UpsertFluxSource(o)
				}
			},
			remove: func(s *model.Store, obj any, _ time.Time) {
				if o, ok := obj.(*model.FluxSource); ok {
					s.DeleteFluxSource(o.Kind, o.Namespace, o.Name)
				}
			}})
	}
	return out
}
