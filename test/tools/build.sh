#!/usr/bin/env bash
# Builds the real components the end-to-end tests run (etcd, kube-apiserver,
# kube-controller-manager, kubectl, the ESO controller, helm, Argo CD, Flux's
# source-controller, kustomize-controller and helm-controller, the sopsenc
# helper, prometheus-operator, its config reloader and a Prometheus v3 with
# Kubernetes discovery, and for the node: kubelet, kube-proxy, kube-scheduler,
# crictl) into a
# cache folder outside the work tree, keyed on each tool module's go.mod +
# go.sum (and a tool's own source when it is in this repository), and installs
# Prometheus, promtool, Alertmanager, redis-server and the node's runtime
# (containerd, runc, buildah, CNI plugins, iptables, busybox) from Debian when
# they are absent.
# A rerun with the same keys costs seconds. Prints the bin folder on stdout's last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${DRIFTWATCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftwatch}
bin="$cache/bin"
mkdir -p "$bin"
log() { echo "tools: $*" >&2; }

key() { cat "$@" | sha256sum | cut -c1-16; }

# build_tool MODULE_DIR NAME PACKAGE [extra go build flags...]
build_tool() {
  local k; k=$(key "$here/$1/go.mod" "$here/$1/go.sum")
  build_keyed "$k" "$@"
}

# build_src_tool MODULE_DIR NAME PACKAGE [extra go build flags...]: for a tool
# whose source is in this repository (PACKAGE a folder of MODULE_DIR), keyed on
# go.mod + go.sum + the package's *.go files.
build_src_tool() {
  local k; k=$(key "$here/$1/go.mod" "$here/$1/go.sum" "$here/$1/$3"/*.go)
  build_keyed "$k" "$@"
}

# build_keyed KEY MODULE_DIR NAME PACKAGE [extra go build flags...]
build_keyed() {
  local k=$1 dir=$2 name=$3 pkg=$4; shift 4
  local stamp="$bin/.$name.key"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$k" ]; then
    log "$name up to date ($k)"; return
  fi
  log "building $name from $pkg (key $k)..."
  local t0=$SECONDS
  [[ $dir = /* ]] || dir="$here/$dir"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath "$@" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$k" > "$stamp"
  log "built $name in $((SECONDS - t0))s"
}

# build_eso NAME PACKAGE [extra go build flags...]: ESO v0.20 registers all of
# its ~37 secret-store providers in one file, pkg/provider/register/register.go,
# with no build tags; the end-to-end tests configure seven of them (aws, azurekv,
# fake, gcpsm, kubernetes, vault, webhook). The other thirty (Oracle's, IBM's,
# Alibaba's, Volcengine's, Yandex's and 1Password's SDKs among them) were half of
# ESO's cold compile (2,011 packages against 1,242). So ESO's module is copied
# from the module cache, that one file replaced by eso/register.go.in, and the
# tool module built with a replace onto the copy: ESO's own controllers,
# providers and generators, unchanged; a store naming one of the thirty is not
# Ready ("no provider registered"), as it would be in an ESO without it. Keyed on
# go.mod + go.sum + register.go.in.
build_eso() {
  local name=$1 k; k=$(key "$here/eso/go.mod" "$here/eso/go.sum" "$here/eso/register.go.in")
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/.$name.key" 2>/dev/null)" = "$k" ]; then
    log "$name up to date ($k)"; return
  fi
  local mod=github.com/external-secrets/external-secrets src w="$cache/build/eso"
  src=$(cd "$here/eso" && go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$src" ] || [ ! -f "$src/pkg/provider/register/register.go" ]; then
    log "cannot find $mod's provider register in the module cache"; exit 1
  fi
  rm -rf "$w"; mkdir -p "$w"
  cp "$here/eso/go.mod" "$here/eso/go.sum" "$w/"
  cp -R "$src" "$w/external-secrets"; chmod -R u+w "$w/external-secrets"
  cp "$here/eso/register.go.in" "$w/external-secrets/pkg/provider/register/register.go"
  (cd "$w" && go mod edit -replace "$mod=./external-secrets")
  build_keyed "$k" "$w" "$@"
  rm -rf "$w"
}

kver=v1.37.2
kldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=$kver"

# The Debian packages install in the background while the Go tools build:
# apt waits on the network and dpkg, go build keeps both cores busy. The Go
# builds stay one after the other: two at a time measured no faster from
# empty caches (prometheus-operator + config reloader and prometheus3: 231 s
# one after the other, 244 s side by side; only relinks gained, 83 s to 37 s
# for every tool). DRIFTWATCH_TOOLS_SERIAL=1 installs the packages first.
go_tools() {
  build_tool etcd etcd go.etcd.io/etcd/server/v3 -ldflags "-s -w"
  build_tool kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "$kldflags"
  build_tool kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager -ldflags "$kldflags"
  build_tool kube kubectl k8s.io/kubernetes/cmd/kubectl -ldflags "$kldflags"
  # The node of test/e2e/node (cluster.Options.Node): the same module and version.
  build_tool kube kubelet k8s.io/kubernetes/cmd/kubelet -ldflags "$kldflags"
  build_tool kube kube-proxy k8s.io/kubernetes/cmd/kube-proxy -ldflags "$kldflags"
  build_tool kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler -ldflags "$kldflags"
  build_tool crictl crictl sigs.k8s.io/cri-tools/cmd/crictl -ldflags "-s -w"
  build_tool helm helm helm.sh/helm/v3/cmd/helm -ldflags "-s -w"
  # Prometheus v3.16.0 (module v0.316.0) with Kubernetes service discovery and
  # no other (remove_all_sd + enable_kubernetes_sd), as prometheus3: the
  # StatefulSet prometheus-operator makes in test/e2e/node runs it. Debian's 2.42
  # (apt_lane) is built without Kubernetes discovery, which every configuration the
  # operator generates uses. The tool module pins client-go to the agent's
  # v0.37.2 so that those packages compile once.
  build_tool prometheus prometheus3 github.com/prometheus/prometheus/cmd/prometheus -tags remove_all_sd,enable_kubernetes_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.16.0"

  build_tool golangci-lint golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint -ldflags "-s -w"
  # The binary must be named external-secrets: ESO derives its field-manager names from it.
  build_eso external-secrets github.com/external-secrets/external-secrets -ldflags "-s -w"
  # prometheus-operator v0.86.1 (the newest the Go module proxy serves here;
  # v0.86.2 and v0.87.0 are refused) and its config reloader, from one tool
  # module (test/e2e/node runs the operator against the stack and the Prometheus
  # StatefulSet it makes on the node; the reloader is that pod's sidecar). Their
  # CRDs are copied below from the same module.
  build_tool promoperator prometheus-operator github.com/prometheus-operator/prometheus-operator/cmd/operator -ldflags "-s -w -X github.com/prometheus/common/version.Version=0.86.1"
  build_tool promoperator prometheus-config-reloader github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader -ldflags "-s -w -X github.com/prometheus/common/version.Version=0.86.1"

  # Argo CD v3.2.9: one binary for every component; Argo CD picks the component
  # from the name it runs as (cmd/main.go), hence the symlinks.
  argocd_ver=3.2.9
  build_tool argocd argocd github.com/argoproj/argo-cd/v3/cmd -ldflags "-s -w -X github.com/argoproj/argo-cd/v3/common.version=$argocd_ver"
  for n in argocd-application-controller argocd-repo-server argocd-server; do ln -sf argocd "$bin/$n"; done
  # Flux: source-controller and kustomize-controller v1.9.6, the patch releases
  # of the Flux v2.9 line (flux2 v2.9.5 installs v1.9.5 of both), from one tool
  # module so that what they share compiles once (the second build reuses the
  # first one's build cache for it). v1.10.x needs Go 1.27 and fluxcd/pkg modules
  # the Go module proxy does not serve (test/tools/flux/go.mod says which).
  build_tool flux source-controller github.com/fluxcd/source-controller -ldflags "-s -w"
  build_tool flux kustomize-controller github.com/fluxcd/kustomize-controller -ldflags "-s -w"
  # helm-controller v1.6.4, the one flux2 v2.9.5 installs, from the same module:
  # beyond what the other two compile it needs 82 packages (Helm v4's action and
  # storage, its own), so it costs little once they are built.
  build_tool flux helm-controller github.com/fluxcd/helm-controller -ldflags "-s -w"
  # sopsenc (test/tools/flux/sopsenc): encrypts the tests' SOPS files with age
  # using the sops v3.13.2 packages kustomize-controller decrypts with, so it
  # reuses their compiled packages from the build above.
  build_src_tool flux sopsenc ./sopsenc -ldflags "-s -w"
}

# Debian packages: one apt-get for every one missing.
# Prometheus 2.42 (+promtool) and Alertmanager 0.25. The packages start
# services on some systems; the tests start their own.
# redis-server for Argo CD (its cache). Nothing is stopped: on a machine where
# the package starts a service, that redis listens on its default port and the
# tests start their own on a free one.
# Chromium for the browser tests of the findings page (test/e2e/ui), driven
# headless over the DevTools protocol (chromedp).
# The node's container runtime: containerd 1.6 (kubelet v1.37 asks it for its
# cgroup driver over CRI's RuntimeConfig, which 1.6 does not implement; v1.37
# then falls back to its own cgroupDriver setting), runc, buildah (the images
# are built here: no registry is reachable), the CNI plugins, iptables
# (kube-proxy) and busybox-static (the shell of the Go build image). Nothing is
# started: on a machine where the package starts a containerd service, it
# keeps its own socket and folders; the tests start theirs with everything
# inside the stack's folder.
apt_lane() {
  local pkgs=() prom=0
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null || ! command -v prometheus-alertmanager >/dev/null; then
    pkgs+=(prometheus prometheus-alertmanager); prom=1
  fi
  command -v redis-server >/dev/null || pkgs+=(redis-server)
  command -v chromium >/dev/null || pkgs+=(chromium)
  if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || ! command -v buildah >/dev/null ||
    [ ! -x /usr/lib/cni/bridge ] || ! command -v iptables >/dev/null || [ ! -x /bin/busybox ]; then
    pkgs+=(containerd runc buildah containernetworking-plugins iptables busybox-static)
  fi
  [ ${#pkgs[@]} -gt 0 ] || return 0
  log "installing from Debian: ${pkgs[*]}..."
  local t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
  if [ $prom = 1 ]; then
    pkill -x prometheus 2>/dev/null || true
    pkill -x prometheus-alertmanager 2>/dev/null || true
  fi
  log "installed from Debian in $((SECONDS - t0))s"
}

if [ "${DRIFTWATCH_TOOLS_SERIAL:-0}" = 1 ]; then
  apt_lane; go_tools
else
  apt_lane & apt_pid=$!
  go_tools
  if ! wait $apt_pid; then log "installing the Debian packages failed"; exit 1; fi
fi
for t in prometheus promtool prometheus-alertmanager; do ln -sf "$(command -v $t)" "$bin/$t"; done
ln -sf "$(command -v redis-server)" "$bin/redis-server"
ln -sf "$(command -v chromium)" "$bin/chromium"
for t in containerd containerd-shim-runc-v2 ctr runc buildah iptables ip nsenter; do ln -sf "$(command -v $t)" "$bin/$t"; done
ln -sf /bin/busybox "$bin/busybox"
ln -sfn /usr/lib/cni "$bin/cni"
# The node test builds the repository's Dockerfile offline: its `go mod
# download` reads the host's module cache as a file:// GOPROXY, which then
# needs every go.mod of the module graph, not only what `go build` reads.
(cd "$here/../.." && go mod download) >&2

# ESO's CRDs and Argo CD's Application CRD, from the modules' own sources
# in the Go module cache (as operator projects do for envtest).
eso_dir=$(cd "$here/eso" && go list -m -f '{{.Dir}}' github.com/external-secrets/external-secrets)
mkdir -p "$cache/crds"
cp -f "$eso_dir/deploy/crds/bundle.yaml" "$cache/crds/eso-bundle.yaml"
# Only Argo CD's source tree is needed (no package of it is built), so the
# module is downloaded on its own rather than required by a tool module.
argocd_mod=github.com/argoproj/argo-cd/v2@v2.14.21
argocd_dir=$(cd / && go mod download -json "$argocd_mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$argocd_dir" ] || [ ! -f "$argocd_dir/manifests/crds/application-crd.yaml" ]; then
  log "cannot find Argo CD's Application CRD in the module cache ($argocd_mod)"; exit 1
fi
cp -f "$argocd_dir/manifests/crds/application-crd.yaml" "$cache/crds/argocd-application-crd.yaml"
# Upstream objects for the corpus e2e (test/e2e/corpus): Argo CD's stock
# install.yaml, and ESO's Helm chart from the same module as the controller.
cp -f "$argocd_dir/manifests/install.yaml" "$cache/crds/argocd-install.yaml"
chmod 644 "$cache/crds/"*.yaml
# The chart lists the bitwarden-sdk-server subchart (condition
# bitwarden-sdk-server.enabled, false by default) that only the published
# chart archive carries; helm install refuses a chart folder with a listed
# dependency missing from charts/. Dropping the disabled dependency from
# Chart.yaml renders the same manifests without fetching it from a registry.
rm -rf "$cache/crds/eso-chart.tmp" "$cache/crds/eso-chart"
cp -R "$eso_dir/deploy/charts/external-secrets" "$cache/crds/eso-chart.tmp"
chmod -R u+w "$cache/crds/eso-chart.tmp"
rm -f "$cache/crds/eso-chart.tmp/Chart.lock"
awk '/^dependencies:/ {skip = 1; next} skip && /^[^ -]/ {skip = 0} !skip' \
  "$eso_dir/deploy/charts/external-secrets/Chart.yaml" > "$cache/crds/eso-chart.tmp/Chart.yaml"
mv "$cache/crds/eso-chart.tmp" "$cache/crds/eso-chart"

# The real Argo CD's manifests, from the module the argocd binary is built from:
# its CRDs, its own config objects and its controller's and API server's RBAC.
argocd3_dir=$(cd "$here/argocd" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
m="$argocd3_dir/manifests"
mkdir -p "$cache/argocd"
for f in crds/application-crd.yaml crds/appproject-crd.yaml \
  base/config/argocd-cm.yaml base/config/argocd-rbac-cm.yaml base/config/argocd-secret.yaml \
  cluster-rbac/application-controller/argocd-application-controller-clusterrole.yaml \
  base/application-controller-roles/argocd-application-controller-role.yaml \
  cluster-rbac/server/argocd-server-clusterrole.yaml base/server/argocd-server-role.yaml; do
  if [ ! -f "$m/$f" ]; then log "cannot find $f in $m"; exit 1; fi
  cp -f "$m/$f" "$cache/argocd/$(basename "$f")"
done
chmod 644 "$cache/argocd/"*.yaml

# The real Flux's manifests, from the modules the controllers are built from:
# every CRD of source-controller, kustomize-controller and helm-controller, and from flux2
# v2.9.5 (the Flux release of that line) the RBAC its install binds the
# controllers to.
src_dir=$(cd "$here/flux" && go list -m -f '{{.Dir}}' github.com/fluxcd/source-controller)
kus_dir=$(cd "$here/flux" && go list -m -f '{{.Dir}}' github.com/fluxcd/kustomize-controller)
helm_dir=$(cd "$here/flux" && go list -m -f '{{.Dir}}' github.com/fluxcd/helm-controller)
flux2_mod=github.com/fluxcd/flux2/v2@v2.9.5
flux2_dir=$(cd / && go mod download -json "$flux2_mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
mkdir -p "$cache/flux"
for f in "$src_dir"/config/crd/bases/*.yaml "$kus_dir"/config/crd/bases/*.yaml "$helm_dir"/config/crd/bases/*.yaml \
  "$flux2_dir/manifests/rbac/controller.yaml" "$flux2_dir/manifests/rbac/reconciler.yaml"; do
  if [ ! -f "$f" ]; then log "cannot find $f"; exit 1; fi
  cp -f "$f" "$cache/flux/$(basename "$f")"
done
chmod 644 "$cache/flux/"*.yaml
# What `flux install` renders from, for the stock-install look-alike
# (test/e2e/flux): flux2's bases of the two controllers, its rbac and policies,
# and each controller's config/crd and config/manager (what the release's
# <controller>.crds.yaml and <controller>.deployment.yaml, which the bases
# fetch over the network, are built from).
inst="$cache/flux/install"
rm -rf "$inst"
mkdir -p "$inst/flux2/bases" "$inst/source-controller" "$inst/kustomize-controller" "$inst/helm-controller"
cp -R "$flux2_dir/manifests/bases/source-controller" "$flux2_dir/manifests/bases/kustomize-controller" \
  "$flux2_dir/manifests/bases/helm-controller" "$inst/flux2/bases/"
cp -R "$flux2_dir/manifests/rbac" "$flux2_dir/manifests/policies" "$inst/flux2/"
cp -R "$src_dir/config/crd" "$src_dir/config/manager" "$inst/source-controller/"
cp -R "$kus_dir/config/crd" "$kus_dir/config/manager" "$inst/kustomize-controller/"
cp -R "$helm_dir/config/crd" "$helm_dir/config/manager" "$inst/helm-controller/"
chmod -R u+w,a+rX "$inst"
# prometheus-operator's CRDs (ServiceMonitor, PrometheusRule, Prometheus, ...)
# and its example RBAC of a Prometheus (ServiceAccount, ClusterRole, binding),
# from the module the operator is built from.
po_dir=$(cd "$here/promoperator" && go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)
rm -rf "$cache/promoperator"
mkdir -p "$cache/promoperator/crds" "$cache/promoperator/rbac"
cp -f "$po_dir"/example/prometheus-operator-crd/*.yaml "$cache/promoperator/crds/"
for f in prometheus-service-account.yaml prometheus-cluster-role.yaml prometheus-cluster-role-binding.yaml; do
  cp -f "$po_dir/example/rbac/prometheus/$f" "$cache/promoperator/rbac/"
done
chmod 644 "$cache/promoperator/"*/*.yaml
echo "$bin"
