package cluster

// Restart hooks: the fault tests stop, kill and start the control plane's
// processes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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
	return c.startESO(context.Background(), restartTimeout)
}

// setESOPorts points the ESO controller's arguments and URLs at these ports.
func (c *Cluster) setESOPorts(metrics, live int) {
	c.ESOMetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	c.esoLive = fmt.Sprintf("http://127.0.0.1:%d/healthz", live)
	c.eso.Args = []string{
		"--enable-leader-election=false",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
		fmt.Sprintf("--live-addr=127.0.0.1:%d", live),
	}
}

// startESO starts the ESO controller and waits for its health endpoint. Its
// ports were free when chosen, but nothing holds them until ESO binds them:
// meanwhile another process on the machine (another e2e package's stack, an
// outgoing connection from the ephemeral range they are drawn from) can take
// one, and ESO exits with "address already in use" (seen once in make test,
// the port answering another server's 404). It is then started again on new
// ports, up to three times in all.
func (c *Cluster) startESO(ctx context.Context, timeout time.Duration) error {
	for attempt := 1; ; attempt++ {
		logStart := fileSize(c.eso.LogPath)
		if err := c.eso.Start(); err != nil {
			return err
		}
		// Its health endpoint answers before the manager binds the metrics
		// port, whose failure stops it a moment later: wait for both.
		err := proc.WaitHTTP(ctx, timeout, c.eso, c.esoLive)
		if err == nil {
			err = proc.WaitHTTP(ctx, timeout, c.eso, c.ESOMetricsURL)
		}
		if err == nil {
			return nil
		}
		exited, _ := c.eso.Exited()
		if attempt == 3 || !exited || !strings.Contains(readFrom(c.eso.LogPath, logStart), "address already in use") {
			return err
		}
		ports, perr := proc.FreePorts(2)
		if perr != nil {
			return err
		}
		c.logf("ESO could not bind its ports (%v): starting it again on 127.0.0.1:%d and :%d", err, ports[0], ports[1])
		c.setESOPorts(ports[0], ports[1])
	}
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns what the file at path holds from offset on ("" when it
// cannot be read).
func readFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}
