# driftwatch — see README.md
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REV     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.revision=$(REV)

.PHONY: build krew-archives test demo lint tools e2e unit fuzz bench bench-go bench-e2e bench-smoke bench-gitops bench-exepages generate clean

build: ## static agent binary and the kubectl plugin in bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/driftwatch ./cmd/agent
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-driftwatch ./cmd/kubectl-driftwatch

krew-archives: ## release archives of the kubectl plugin and their sha256 in plugins/driftwatch.yaml: make krew-archives VERSION=v0.1.0
	bash plugins/krew-archives.sh $(VERSION)

test: ## everything, on a fresh machine too: tools, lint, unit, e2e, apicompat, fuzz
	bash test/run.sh

generate: ## every generated file, from the catalog and the rules: README metric tables and detector list, alerts/metrics.txt, dashboards/panels.txt, the dashboards, the chart's copies (a stale one fails its test)
	DRIFTWATCH_E2E=0 DRIFTWATCH_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestREADMEMetricTables|TestMetricsTxtIsGenerated|TestDashboardPanelsAreGenerated|TestREADMENamesEveryDetector' ./collectors/
	cd dashboards && $(GO) generate ./...
	DRIFTWATCH_UPDATE=1 $(GO) test -count=1 -run CopiesInSync ./deploy/

demo: ## run the agent against the embedded simulated cluster
	$(GO) run ./cmd/agent --demo

tools: ## build/install the real components the e2e tests run (cached)
	bash test/tools/build.sh

unit: ## unit tests only (no real cluster)
	DRIFTWATCH_E2E=0 $(GO) test ./...

e2e: tools ## end-to-end tests only
	DRIFTWATCH_TOOLS_BIN=$$(bash test/tools/build.sh | tail -n 1) $(GO) test -count=1 ./test/e2e/...

lint: tools ## gofmt, go vet and golangci-lint (.golangci.yml)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$$(bash test/tools/build.sh | tail -n 1)/golangci-lint run ./...

fuzz: ## longer fuzz run: make fuzz FUZZTIME=10m
	for f in $$($(GO) test -list '^Fuzz' ./internal/parse/ | grep '^Fuzz'); do \
	  $(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$${FUZZTIME:-2m} ./internal/parse/ || exit 1; done

bench: bench-go bench-e2e ## the performance benchmark: Go benchmarks, then the issue's size on the real apiserver, ending with the side-by-side bare/driftwatch table (docs/performance.md)

bench-go: ## Go benchmarks (numbers, never assertions); DRIFTWATCH_BENCH_SCALE=1 / DRIFTWATCH_HEAP_SCALE=1 for full size
	$(GO) test -run='^$$' -bench=. -benchmem ./detect/ ./internal/model/ ./internal/parse/ ./internal/transform/ ./internal/agent/ ./internal/ui/ ./internal/flux/build/ ./internal/flux/desired/

bench-e2e: tools ## full-size bench on the real apiserver (~30 min with the latency-as-a-ratio phase, BENCHFLAGS=--latency-reps=0 skips it; numbers, never assertions)
	DRIFTWATCH_TOOLS_BIN=$$(bash test/tools/build.sh | tail -n 1) $(GO) run ./test/bench --report bench-report.md --sync-rounds 5 $(BENCHFLAGS)

bench-smoke: tools ## tiny bench (~2 min): checks every row, the latency ratio and the side-by-side table are produced
	DRIFTWATCH_TOOLS_BIN=$$(bash test/tools/build.sh | tail -n 1) $(GO) run ./test/bench --smoke

bench-exepages: ## what a container is charged for the executable's pages, with and without --return-executable-pages (~2 min; root: makes memory cgroups)
	bash test/bench/exepages-charge.sh

bench-gitops: tools ## the GitOps paths at scale on the real apiserver (~30 min: 500 then 1,000 Kustomizations over 50/100 artifacts, 500/1,000 Applications; GITOPSFLAGS=--smoke for a tiny run; numbers, never assertions)
	DRIFTWATCH_TOOLS_BIN=$$(bash test/tools/build.sh | tail -n 1) $(GO) run ./test/bench/gitops --report bench-gitops-report.md $(GITOPSFLAGS)

clean:
	rm -rf bin dist
