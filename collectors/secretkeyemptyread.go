package collectors

// The secret_key_empty_read detector: its metric family (the catalog entry), its
// registry entry and how it emits (detect/secretkeyemptyread.go is the detector
// itself).

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var descSecretKeyEmptyRead = declare(finding.Family{
	Name:  "driftwatch_secret_key_empty_read",
	Panel: "empty keys read",
	Offline: "needs the live Secret's value lengths and the running pods: the data of a delivered Secret is written at run time " +
		"(ESO, a controller, kubectl), and an ExternalSecret's provider value is never in the manifests",
	Commands: secretKeyEmptyReadCommands,
	Help: "Running pods that read a key of the Secret by name (env secretKeyRef, secret or projected volume items) whose value is empty (0 bytes): " +
		"the variable is set to \"\" or the file is empty, and nothing fails until the application uses it " +
		"(with --no-key-label: the number of such keys per Secret, key empty).",
	Labels:   []string{"namespace", "secret", "key"},
	Kind:     finding.KindFinding,
	Object:   &finding.ObjectRef{Kind: "Secret", NameLabel: "secret"},
	Class:    "Missing keys",
	Severity: finding.SevInfo,
})

func init() {
	register(detector{name: detect.DetectorSecretKeyEmptyRead, requires: []model.Resource{model.ResSecrets, model.ResPods},
		emit: emitSecretKeyEmptyRead, perNamespace: true, families: []*prometheus.Desc{descSecretKeyEmptyRead}})
}

func emitSecretKeyEmptyRead(e *emitter, v model.View, a model.Availability, _ time.Time) {
	res := detect.SecretKeyEmptyRead(v, a)
	for ns, n := range res.Silenced {
		e.silence(ns, n)
	}
	if !e.cfg.NoKeyLabel {
		for _, r := range res.Empty {
			if f := e.gauge(descSecretKeyEmptyRead, float64(r.Pods), r.Namespace, r.Secret, r.Key); f != nil {
				f.Evidence = fmt.Sprintf("%s read%s key %s by name (env secretKeyRef or volume items); its value in Secret %s is empty (0 bytes): "+
					"%d running pod(s) see an empty variable or file", expectedBy(detect.SourcePod, r.Consumers, false), plural(len(r.Consumers)),
					r.Key, r.Secret, r.Pods)
				f.Consumers = findingConsumers(r.Consumers)
			}
		}
		return
	}
	// Without key names: the number of empty keys read per Secret, key "".
	type group struct {
		keys      int
		consumers []detect.Consumer
	}
	groups := map[model.Ref]*group{}
	var order []model.Ref
	for _, r := range res.Empty {
		ref := model.Ref{Namespace: r.Namespace, Name: r.Secret}
		g := groups[ref]
		if g == nil {
			g = &group{}
			groups[ref] = g
			order = append(order, ref)
		}
		g.keys++
		g.consumers = mergeWorkloads(g.consumers, r.Consumers)
	}
	for _, ref := range order {
		g := groups[ref]
		if f := e.gauge(descSecretKeyEmptyRead, float64(g.keys), ref.Namespace, ref.Name, ""); f != nil {
			f.Evidence = fmt.Sprintf("%s read%s by name %d key(s) of Secret %s whose value is empty (0 bytes)",
				expectedBy(detect.SourcePod, g.consumers, false), plural(len(g.consumers)), g.keys, ref.Name)
			f.Consumers = findingConsumers(g.consumers)
		}
	}
}

func findingConsumers(cs []detect.Consumer) []finding.Consumer {
	out := make([]finding.Consumer, 0, len(cs))
	for _, c := range cs {
		out = append(out, finding.Consumer{Kind: c.Kind, Name: c.Name, Pods: c.Pods})
	}
	return out
}

// mergeWorkloads adds the workloads of b to a, keeping the larger pod count of
// a workload in both (the pods reading one key may read another too).
func mergeWorkloads(a, b []detect.Consumer) []detect.Consumer {
	for _, c := range b {
		i := 0
		for i < len(a) && (a[i].Kind != c.Kind || a[i].Name != c.Name) {
			i++
		}
		switch {
		case i == len(a):
			a = append(a, c)
		case c.Pods > a[i].Pods:
			a[i].Pods = c.Pods
		}
	}
	return a
}

func secretKeyEmptyReadCommands(c *finding.Commands) {
	ns, name, key := c.NS(), c.Name(), c.F.Labels["key"]
	c.Confirm("the Secret's keys whose value is empty (names only)", "kubectl -n "+ns+" get secret "+name+
		` -o json | jq '.data // {} | with_entries(select(.value == "")) | keys'`)
	if key != "" {
		c.Confirm("the running pods that read the key by name", "kubectl -n "+ns+" get pods --field-selector=status.phase=Running -o json | jq -r --arg s "+name+
			" --arg k "+c.L("key")+` '.items[] | .metadata.name as $p |`+
			` (((.spec.containers + (.spec.initContainers // []))[] | .name as $c | .env[]? | select(.valueFrom.secretKeyRef.name == $s and .valueFrom.secretKeyRef.key == $k) | "\($p) \($c) env \(.name)"),`+
			` (.spec.volumes[]? | .name as $v | ((.secret // empty | select(.secretName == $s)), (.projected.sources[]?.secret // empty | select(.name == $s))) | .items[]? | select(.key == $k) | "\($p) volume \($v) \(.path)"))'`)
	}
	c.Confirm("who wrote the Secret's data", "kubectl -n "+ns+" get secret "+name+" --show-managed-fields -o json | "+finding.JQManagers)
	for _, es := range c.Writers {
		if key != "" {
			c.Confirm("where ExternalSecret "+es+" reads the key at the provider (remoteRef, no value)", "kubectl -n "+ns+" get externalsecret "+finding.Sh(es)+
				" -o json | jq --arg k "+c.L("key")+` '[.spec.data[]? | select(.secretKey == $k) | .remoteRef]'`)
		}
		c.Fix("after setting the value at the provider, refresh the ExternalSecret",
			"kubectl -n "+ns+" annotate externalsecret "+finding.Sh(es)+" force-sync=$(date +%s) --overwrite")
	}
	c.Restarts()
}
