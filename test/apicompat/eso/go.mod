module github.com/driftwatch/driftwatch/test/apicompat/eso

go 1.26.0

require (
	github.com/driftwatch/driftwatch v0.0.0-00010101000000-000000000000
	github.com/external-secrets/external-secrets v0.20.4
	k8s.io/api v0.37.2
	k8s.io/apimachinery v0.37.2
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/evanphx/json-patch/v5 v5.9.11 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v1.0.0 // indirect
	github.com/go-openapi/jsonreference v1.0.0 // indirect
	github.com/go-openapi/swag v0.27.1 // indirect
	github.com/go-openapi/swag/cmdutils v0.27.1 // indirect
	github.com/go-openapi/swag/conv v0.27.1 // indirect
	github.com/go-openapi/swag/fileutils v0.27.1 // indirect
	github.com/go-openapi/swag/jsonname v0.25.1 // indirect
	github.com/go-openapi/swag/jsonutils v0.27.1 // indirect
	github.com/go-openapi/swag/loading v0.27.1 // indirect
	github.com/go-openapi/swag/mangling v0.27.1 // indirect
	github.com/go-openapi/swag/netutils v0.27.1 // indirect
	github.com/go-openapi/swag/stringutils v0.27.1 // indirect
	github.com/go-openapi/swag/typeutils v0.27.1 // indirect
	github.com/go-openapi/swag/yamlutils v0.27.1 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.73.1 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.47.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	gomodules.xyz/jsonpatch/v2 v2.5.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/apiextensions-apiserver v0.36.4 // indirect
	k8s.io/client-go v0.37.2 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260721132016-d427ff9ee9ad // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/controller-runtime v0.24.1 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace github.com/driftwatch/driftwatch => ../../..

replace github.com/Masterminds/sprig/v3 => github.com/external-secrets/sprig/v3 v3.3.0

// ESO v0.20.4's apis packages import controller-runtime v0.22.3, which does not
// compile against client-go v0.37 (missing HasSyncedChecker); controller-runtime
// v0.25 (the first for k8s v0.37) changed NewWebhookManagedBy's signature, which
// ESO's webhook files in the same package call. So this module builds ESO's types
// with ESO's own k8s.io pins. The agent's local structs only use metav1 types.
replace (
	k8s.io/api => k8s.io/api v0.34.1
	k8s.io/apimachinery => k8s.io/apimachinery v0.34.1
	k8s.io/client-go => k8s.io/client-go v0.34.1
)

// ESO v0.20's API types import controller-runtime: keep the version ESO
// requires. The main module now requires controller-runtime v0.24.1 (through
// fluxcd/pkg/kustomize), which minimal version selection would pick here, and
// v0.24.1's pkg/cache does not compile with client-go v0.37.2 (it is not
// compiled in the main module, which imports only pkg/client).
replace sigs.k8s.io/controller-runtime => sigs.k8s.io/controller-runtime v0.22.3

// The versions test/tools/eso builds ESO with, where the agent's requirements
// would select newer ones: the packages this module and that tool share then
// compile once (TestSameVersionsAsTheTool; internal/buildshare says why).
replace (
	github.com/fxamacker/cbor/v2 => github.com/fxamacker/cbor/v2 v2.9.0
	github.com/go-openapi/jsonpointer => github.com/go-openapi/jsonpointer v0.22.1
	github.com/go-openapi/jsonreference => github.com/go-openapi/jsonreference v0.21.2
	github.com/go-openapi/swag => github.com/go-openapi/swag v0.25.1
	github.com/go-openapi/swag/cmdutils => github.com/go-openapi/swag/cmdutils v0.25.1
	github.com/go-openapi/swag/conv => github.com/go-openapi/swag/conv v0.25.1
	github.com/go-openapi/swag/fileutils => github.com/go-openapi/swag/fileutils v0.25.1
	github.com/go-openapi/swag/jsonutils => github.com/go-openapi/swag/jsonutils v0.25.1
	github.com/go-openapi/swag/loading => github.com/go-openapi/swag/loading v0.25.1
	github.com/go-openapi/swag/mangling => github.com/go-openapi/swag/mangling v0.25.1
	github.com/go-openapi/swag/netutils => github.com/go-openapi/swag/netutils v0.25.1
	github.com/go-openapi/swag/stringutils => github.com/go-openapi/swag/stringutils v0.25.1
	github.com/go-openapi/swag/typeutils => github.com/go-openapi/swag/typeutils v0.25.1
	github.com/go-openapi/swag/yamlutils => github.com/go-openapi/swag/yamlutils v0.25.1
	github.com/prometheus/client_golang => github.com/prometheus/client_golang v1.23.2
	github.com/prometheus/client_model => github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common => github.com/prometheus/common v0.67.1
	github.com/prometheus/procfs => github.com/prometheus/procfs v0.17.0
	go.yaml.in/yaml/v2 => go.yaml.in/yaml/v2 v2.4.3
	go.yaml.in/yaml/v3 => go.yaml.in/yaml/v3 v3.0.4
	golang.org/x/net => golang.org/x/net v0.46.0
	golang.org/x/oauth2 => golang.org/x/oauth2 v0.32.0
	golang.org/x/sync => golang.org/x/sync v0.17.0
	golang.org/x/sys => golang.org/x/sys v0.37.0
	golang.org/x/term => golang.org/x/term v0.36.0
	golang.org/x/text => golang.org/x/text v0.30.0
	golang.org/x/time => golang.org/x/time v0.14.0
	google.golang.org/protobuf => google.golang.org/protobuf v1.36.10
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.34.1
	k8s.io/klog/v2 => k8s.io/klog/v2 v2.130.1
	k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912
	k8s.io/utils => k8s.io/utils v0.0.0-20251002143259-bc988d571ff4
	sigs.k8s.io/structured-merge-diff/v6 => sigs.k8s.io/structured-merge-diff/v6 v6.3.0
)
