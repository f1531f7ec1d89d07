package model

// ResourceState is the health of one watched resource, as the informer layer sees
// it. Detectors run only on resources that are Available.
type ResourceState struct {
	Resource Resource
	// Enabled: the API is served (CRD present) and the resource is configured.
	Enabled bool
	// Synced: every informer for it finished its initial list.
	Synced bool
	// Degraded: access was lost after start (403, 401); the cache may be stale.
	Degraded bool
	// Reason says why a resource is not available: crd_absent, forbidden, not_synced.
	Reason string
	// Version is the API version in use (e.g. external-secrets.io/v1).
	Version string
}

// Available reports whether detectors may trust this resource's cache.
func (s ResourceState) Available() bool { return s.Enabled && s.Synced && !s.Degraded }

// Health answers which resources are available.
type Health interface {
	States() []ResourceState
}

// Availability is a lookup table built from Health.States.
type Availability map[Resource]bool

// AvailabilityOf turns states into a lookup table.
func AvailabilityOf(states []ResourceState) Availability {
	a := Availability{}
	for _, s := range states {
		a[s.Resource] = s.Available()
	}
	return a
}

// All reports whether every listed resource is available.
func (a Availability) All(rs ...Resource) bool {
	for _, r := range rs {
		if !a[r] {
			return false
		}
	}
	return true
}
