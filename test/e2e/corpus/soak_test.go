package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/pages"
)

// editorScript is the KUBE_EDITOR for a non-interactive `kubectl edit`: it
// adds the data key $EDIT_KEY with the base64 value $EDIT_VALUE under the
// object's data: line, as a person would in an editor.
const editorScript = `#!/bin/sh
set -e
sed -i "s|^data:\$|data:\n  ${EDIT_KEY}: ${EDIT_VALUE}|" "$1"
`

// soak runs rounds of everyday, benign changes until soakFor has passed
// since start (at least two rounds). The monitor scrapes all along; the
// phase names the step.
func (r *run) soak(agent *cluster.Agent, start time.Time) {
	r.t.Helper()
	t, ns := r.t, r.ns
	editor := filepath.Join(r.c.TempDir(t, "editor"), "add-key.sh")
	if err := os.WriteFile(editor, []byte(editorScript), 0o755); err != nil {
		t.Fatal(err)
	}
	for round := 1; ; round++ {
		rs := fmt.Sprintf("r%d", round)
		type step struct {
			name string
			do   func()
		}
		steps := []step{
			{"kubectl label and annotate Secret labeled", func() {
				r.kubectl("", "label", "secret", "labeled", "-n", ns, "corpus-round="+rs, "--overwrite")
				r.kubectl("", "annotate", "secret", "labeled", "-n", ns, "corpus/note=round "+rs, "--overwrite")
				if round == 1 {
					r.fact("after kubectl label + annotate: %s", secretFacts(r.ctx, r.c, ns, "labeled"))
				}
			}},
			{"kubectl patch Secret patched: add key extra-" + rs, func() {
				before := r.secret(ns, "patched").Annotations[lastAppliedAnnotation]
				r.kubectl("", "patch", "secret", "patched", "-n", ns, "-p",
					fmt.Sprintf(`{"data":{"extra-%s":%q}}`, rs, b64("corpus-extra-"+rs)))
				s := r.secret(ns, "patched")
				if round == 1 {
					r.fact("kubectl patch left the last-applied annotation unchanged: %v; %s",
						s.Annotations[lastAppliedAnnotation] == before, secretFacts(r.ctx, r.c, ns, "patched"))
				}
			}},
			{"kubectl edit Secret edited: add key edit-" + rs, func() {
				before := r.secret(ns, "edited").Annotations[lastAppliedAnnotation]
				if _, err := r.c.KubectlEnv(r.ctx, []string{"KUBE_EDITOR=" + editor, "EDIT_KEY=edit-" + rs, "EDIT_VALUE=" + b64("corpus-edit-"+rs)},
					"", "edit", "secret", "edited", "-n", ns); err != nil {
					t.Fatal(err)
				}
				s := r.secret(ns, "edited")
				if _, ok := s.Data["edit-"+rs]; !ok {
					t.Fatalf("kubectl edit did not add key edit-%s (keys %s)", rs, dataKeys(s))
				}
				if round == 1 {
					la, _ := lastAppliedDataKeys(s)
					r.fact("kubectl edit (no --save-config) left the last-applied annotation unchanged: %v (its keys %q); %s",
						s.Annotations[lastAppliedAnnotation] == before, la, secretFacts(r.ctx, r.c, ns, "edited"))
				}
			}},
			{"kubectl delete + apply Secret recreated (same data)", func() {
				// Between the delete and the apply the Secret really does not
				// exist and the recycler pod reads it: reporting it absent
				// then is true (the rule's for: keeps it from paging). The
				// allowance lasts until the agent has seen it back.
				closeIt := r.mon.AllowFault(pages.Page{Alert: "DriftwatchSecretAbsentConsumed", Object: ns + "/recreated"})
				r.kubectl("", "delete", "secret", "recreated", "-n", ns)
				r.kubectl(recreatedManifest, "apply", "-n", ns, "-f", "-")
				r.expect(agent, false, "driftwatch_secret_absent", map[string]string{"namespace": ns, "secret": "recreated"})
				closeIt()
				if round == 1 {
					r.fact("after delete + re-create: %s", secretFacts(r.ctx, r.c, ns, "recreated"))
				}
			}},
			{"helm upgrade " + esoRelease + " (commonLabels only)", func() {
				r.helm("upgrade", esoRelease, r.chart, "-n", esoNS, "--reuse-values", "--set", "commonLabels.driftwatch-corpus-round="+rs)
				s := r.secret(esoNS, webhookSecret)
				if len(s.Data["tls.crt"]) == 0 || s.Labels["driftwatch-corpus-round"] != rs {
					t.Errorf("fact changed: after helm upgrade the webhook Secret has keys %s and labels %v; want the cert-controller's keys kept and the new label", dataKeys(s), s.Labels)
				}
				if round == 1 {
					r.fact("after helm upgrade: %s", secretFacts(r.ctx, r.c, esoNS, webhookSecret))
					r.fact("after helm upgrade: %s", secretFacts(r.ctx, r.c, esoNS, "sh.helm.release.v1."+esoRelease+".v1"))
					r.fact("after helm upgrade: %s", secretFacts(r.ctx, r.c, esoNS, "sh.helm.release.v1."+esoRelease+".v2"))
				}
			}},
			{"kubectl label Secrets app-sa-token and argocd-secret", func() {
				r.kubectl("", "label", "secret", "app-sa-token", "-n", ns, "corpus-round="+rs, "--overwrite")
				r.kubectl("", "label", "secret", "argocd-secret", "-n", argoNS, "corpus-round="+rs, "--overwrite")
			}},
			{"kubectl apply the app objects again (unchanged)", func() {
				r.kubectl(appObjects("db-user", "db-pass"), "apply", "-n", ns, "-f", "-")
				s := r.secret(ns, "patched")
				if _, ok := s.Data["extra-"+rs]; !ok {
					t.Errorf("fact changed: kubectl apply removed key extra-%s that kubectl patch added (keys %s)", rs, dataKeys(s))
				}
				if round == 1 {
					la, _ := lastAppliedDataKeys(s)
					r.fact("kubectl apply after kubectl patch keeps the patched keys; last-applied keys %q; %s", la, secretFacts(r.ctx, r.c, ns, "patched"))
				}
			}},
		}
		if round == 1 {
			steps = append(steps, step{"kubectl apply Argo CD's install.yaml again (an upgrade to the same version)", func() {
				r.kubectl(r.argo.rest, "apply", "-n", argoNS, "-f", "-")
				s := r.secret(argoNS, "argocd-secret")
				if len(s.Data["server.secretkey"]) == 0 {
					t.Errorf("fact changed: kubectl apply of install.yaml removed argocd-server's server.secretkey (keys %s)", dataKeys(s))
				}
				r.fact("after kubectl apply of install.yaml again: %s", secretFacts(r.ctx, r.c, argoNS, "argocd-secret"))
			}})
		}
		if round == 2 {
			steps = slices.Insert(steps, 3, step{"agent restart", func() {
				r.fact("before the agent restart: %s", r.lastDataChange(agent))
				if err := agent.Stop(); err != nil {
					t.Errorf("the agent's exit on SIGTERM: %v", err)
				}
				if err := agent.Start(); err != nil {
					t.Fatal(err)
				}
				agent.WaitReady(t, waitFinding)
				r.fact("after the agent restart: %s", r.lastDataChange(agent))
			}})
		}
		for _, s := range steps {
			r.step("soak %s: %s", rs, s.name)
			s.do()
			time.Sleep(3 * time.Second)
		}
		if round >= 2 && time.Since(start) >= soakFor {
			return
		}
	}
}

// lastDataChange lists the agent's driftwatch_secret_last_data_change_timestamp_seconds
// series of the app namespace (source says observed or managed_fields).
func (r *run) lastDataChange(agent *cluster.Agent) string {
	all, err := agent.Scrape()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range scrape.Find(all, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": r.ns}) {
		fmt.Fprintf(&b, "\n    %s", s)
	}
	return b.String()
}
