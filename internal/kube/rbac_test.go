package kube

import (
	"os"
	"sort"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The shipped ClusterRole grants exactly what the informers read: every watched
// resource, nothing else, and only get/list/watch.
func TestClusterRoleMatchesWatchedResources(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/manifests/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		verbs := append([]string(nil), r.Verbs...)
		sort.Strings(verbs)
		if len(verbs) != 3 || verbs[0] != "get" || verbs[1] != "list" || verbs[2] != "watch" {
			t.Errorf("rule %v: verbs %v, want exactly get/list/watch", r.Resources, r.Verbs)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				granted[g+"/"+res] = true
			}
		}
	}
	watched := map[string]bool{"/secrets": true, "/pods": true, "/serviceaccounts": true, "/namespaces": true}
	for _, api := range optionalAPIs() {
		watched[api.group+"/"+api.resource] = true
	}
	for r := range watched {
		if !granted[r] {
			t.Errorf("the agent watches %s but the ClusterRole does not grant it", r)
		}
	}
	for r := range granted {
		if !watched[r] {
			t.Errorf("the ClusterRole grants %s, which the agent never reads", r)
		}
	}
}
