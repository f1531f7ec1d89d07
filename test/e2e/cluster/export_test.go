package cluster

// ESOLiveURL is the ESO controller's health endpoint (tests of the stack).
func (c *Cluster) ESOLiveURL() string { return c.esoLive }
