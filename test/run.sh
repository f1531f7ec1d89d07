#!/usr/bin/env bash
# The whole test suite, from a fresh machine: builds or reuses the real components
# (kube-apiserver, etcd, kube-controller-manager, kubectl, the ESO controller, helm, Argo CD, Flux,
# redis, Prometheus, promtool, Alertmanager, and the node's kubelet, kube-proxy,
# kube-scheduler, crictl, containerd, runc, buildah, CNI plugins), then runs lint,
# unit, end-to-end, API compatibility and short fuzz tests. `make test` runs this;
# so does .ci/run. It needs root: build.sh installs Debian packages, and
# test/e2e/node runs a real node (it fails, never skips, without root).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
step() { echo "=== $* ($((SECONDS - t0))s)"; }

# Every build of the suite compiles as the Dockerfile and test/tools/build.sh do
# (CGO_ENABLED=0, -trimpath), so the Go build cache holds one compile of each
# package: the node test's image build from the Dockerfile (which mounts that
# cache) and the agent binaries the end-to-end tests build only link. With cgo
# on, the Dockerfile's build shared nothing with the suite's and compiled every
# dependency again (233 s here). The race detector needs cgo and compiles apart
# anyway.
export CGO_ENABLED=0 GOFLAGS=-trimpath

step "tools"
bin=$(bash test/tools/build.sh | tail -n 1)
export DRIFTWATCH_TOOLS_BIN="$bin"
export PATH="$bin:$PATH"

step "lint"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') 2>/dev/null || true)
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi
go vet ./...
# golangci-lint v2 (test/tools/golangci-lint, .golangci.yml): unused, depguard
# (the layering), promlinter, errcheck, staticcheck.
golangci-lint run ./...

# The separate test modules and the short fuzz budget run in the background,
# niced to 19, beside the unit and end-to-end step: that step waits on real
# controllers and leaves a share of the two cores idle, which the background
# takes without competing (a nice-0 process preempts it), and neither has a
# real-time limit that waiting could break (the fuzz budget counts executions;
# a fuzz worker gives an input 10 s of wall time: the niced background had 6-44 %
# of the CPU in every 5-s sample (one each 20 s) of a run). The race step
# keeps the foreground after the end-to-end step: its unit tests wait on real
# timers. Their output is printed when they are done; a failure of either
# fails the run.
background() {
  renice -n 19 -p "$BASHPID" >/dev/null
  step "separate test modules (background, niced): API compatibility with ESO and Argo CD types, dashboards, the krew manifest"
  for m in test/apicompat/*/ dashboards/ test/krew/; do
    [ -f "$m/go.mod" ] || continue
    (cd "$m" && go test -count=1 -timeout 30m ./...)
  done

  step "short fuzz budget (background, niced)"
  # A budget in executions, not seconds: when a time budget expires while the fuzzer
  # is minimising a new input, go test reports "context deadline exceeded" as a
  # failure (a flake that is not a finding). Helm payloads are slow to decode.
  fuzztime=${DRIFTWATCH_FUZZTIME:-20000x}
  for pkg in ./internal/parse/ ./internal/argocd/ignorepath/ ./internal/lint/ ./internal/transform/ ./internal/flux/desired/; do
    for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
      budget=$fuzztime
      [ "$f" = FuzzHelmRelease ] && budget=${DRIFTWATCH_FUZZTIME_HELM:-1500x}
      go test -run='^$' -fuzz="^$f\$" -fuzztime="$budget" -fuzzminimizetime=100x "$pkg"
    done
  done
  step "background steps done"
}

step "unit and end-to-end tests"
# The agent every end-to-end package runs, built once here from this checkout
# (tools.BuildAgent takes it from DRIFTWATCH_AGENT_BIN): each package linked its
# own, about 9 s of CPU each.
work=$(mktemp -d)
bg=
trap '[ -z "$bg" ] || kill -- -"$bg" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/driftwatch" ./cmd/agent
set -m # the background in its own process group, so that the trap ends all of it
background </dev/null >"$work/background.log" 2>&1 &
bg=$!
set +m
# Three packages at a time on two cores: the end-to-end packages spend most of
# their time waiting on real controllers (the load stayed at 1-2.5 with two at
# a time), and with two the warm suite passed 15 minutes once the node test came.
# The end-to-end packages are named longest first (their warm package times,
# about 400 s for the node down to 25 s for ui) so that the short ones fill
# the gaps at the end instead of a 100-s package ending the run alone (with
# only the four longest named, sharding or load did: 30 s of the step's wall
# in a simulation of the last run's times); go test drops the repeats.
DRIFTWATCH_AGENT_BIN="$work/driftwatch" go test -count=1 -p "${DRIFTWATCH_TEST_PARALLEL:-3}" -timeout 45m \
  ./test/e2e/node/ ./test/e2e/corpus/ ./test/e2e/argocd/ ./test/e2e/storefaults/ ./test/e2e/faults/ \
  ./test/e2e/corpus/gitops/ ./test/e2e/fullchain/ ./test/e2e/sharding/ ./test/e2e/load/ ./test/e2e/flux/ \
  ./test/e2e/detectors/ ./test/bench/ ./test/e2e/cluster/ ./test/e2e/chart/ ./test/e2e/leak/ ./test/e2e/ui/ \
  ./...

step "race detector on the concurrent packages"
CGO_ENABLED=1 go test -count=1 -race ./internal/model/ ./internal/kube/ ./internal/transform/ ./collectors/ ./internal/agent/

step "waiting for the background steps (separate test modules, short fuzz budget)"
rc=0
wait "$bg" || rc=$?
bg=
cat "$work/background.log"
if [ "$rc" -ne 0 ]; then
  echo "the background steps failed (exit $rc)"
  exit "$rc"
fi
step "done"
