package cluster

// Restart hooks: the fault tests stop, kill and start the control plane's
// processes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
)

func (c *Cluster) waitReadyz(ctx context.Context, timeout time.Duration) error {
	rc := c.Client.Discovery().RESTClient()
	return proc.WaitFor(ctx, timeout, "kube-apiserver /readyz", c.apiserver, func(ctx context.Context) (bool, error) {
		b, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, b)
		}
		return string(b) == "ok", nil
	})
}

// restartTimeout bounds the restart hooks' waits.
const restartTimeout = 90 * time.Second

// StopAPIServer stops kube-apiserver gracefully (SIGTERM; it closes open
// watches after 2 s and exits in about a second; SIGKILL after 15 s). Its
// port stays assigned, so StartAPIServer brings it back at the same URL and
// clients reconnect.
func (c *Cluster) StopAPIServer() { c.apiserver.Stop(15 * time.Second) }

// KillAPIServer SIGKILLs kube-apiserver (a crash); StartAPIServer restarts it.
func (c *Cluster) KillAPIServer() { c.apiserver.Kill() }

// StartAPIServer starts kube-apiserver again (same port, flags and etcd) and
// waits until /readyz answers ok.
func (c *Cluster) StartAPIServer() error {
	if err := c.apiserver.Start(); err != nil {
		return err
	}
	return c.waitReadyz(context.Background(), restartTimeout)
}

// StopEtcd stops etcd gracefully (SIGTERM, SIGKILL after 15 s), keeping its
// data. While kube-apiserver holds streams to it, etcd's graceful stop takes
// about 7 s (its own timeout); KillEtcd is immediate.
func (c *Cluster) StopEtcd() { c.etcd.Stop(15 * time.Second) }

// KillEtcd SIGKILLs etcd (a crash). Its data survives (written, if not
// fsynced, before the kill); StartEtcd restarts it.
func (c *Cluster) KillEtcd() { c.etcd.Kill() }

// StartEtcd starts etcd again on the same ports and data, waits until it is
// healthy and, if kube-apiserver is running, until the apiserver is ready again.
func (c *Cluster) StartEtcd() error {
	if err := c.etcd.Start(); err != nil {
		return err
	}
	ctx := context.Background()
	if err := proc.WaitFor(ctx, restartTimeout, "etcd /health", c.etcd, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.EtcdURL+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`), nil
	}); err != nil {
		return err
	}
	if c.apiserver != nil && c.apiserver.PID() != 0 {
		return c.waitReadyz(ctx, restartTimeout)
	}
	return nil
}

// StopESOController stops the ESO controller (if the stack runs it).
func (c *Cluster) StopESOController() {
	if c.eso != nil {
		c.eso.Stop(15 * time.Second)
	}
}

// StartESOController starts the ESO controller again and waits for its
// health endpoint.
func (c *Cluster) StartESOController() error {
	if c.eso == nil {
		return errors.New("the stack was started without Options.ESOController")
	}
	if err := c.eso.Start(); err != nil {
		return err
	}
	return proc.WaitHTTP(context.Background(), restartTimeout, c.eso, c.esoLive)
}
