package cluster

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// FreePorts returns n distinct free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) { return proc.FreePorts(n) }

// TempDir creates a folder inside the stack's Dir (so the teardown check
// covers it) and removes it when the test ends.
func (c *Cluster) TempDir(t testing.TB, prefix string) string {
	t.Helper()
	base := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(base, prefix+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// Process is a helper process a test started on the stack (Prometheus,
// Alertmanager, ESO's cert-controller...): its own process group, SIGKILL if
// the test binary dies, its log in LogDir, stopped when the test ends (and by
// the stack's teardown, whose leftover check covers it).
type Process struct {
	// Name names it in messages; LogPath is its combined stdout/stderr.
	Name    string
	LogPath string
	proc    *proc.Process
}

// StartProcess starts path with args and env (added to the test binary's
// environment). Its log is LogDir/<name>.log; when the test fails, its last
// 80 lines go to the test log.
func (c *Cluster) StartProcess(t testing.TB, name, path string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, LogPath: filepath.Join(c.LogDir, name+".log")}
	p.proc = &proc.Process{Name: name, Path: path, Args: args, Env: env, LogPath: p.LogPath}
	c.mu.Lock()
	c.extra = append(c.extra, p.proc)
	c.mu.Unlock()
	if err := p.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("----- %s log (%s), last 80 lines -----\n%s", name, p.LogPath, proc.TailFile(p.LogPath, 80))
		}
	})
	return p
}

// Stop stops the process (SIGTERM to its group, SIGKILL after 15 s) and
// waits until its group is gone.
func (p *Process) Stop() { p.proc.Stop(15 * time.Second) }

// Exited reports whether the process has exited, and its exit error.
func (p *Process) Exited() (bool, error) { return p.proc.Exited() }

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string { return proc.TailFile(p.LogPath, n) }

// WaitHTTP polls url until it answers 200, failing the test if the process
// exits first or the timeout passes.
func (p *Process) WaitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if gone, err := p.Exited(); gone {
			t.Fatalf("%s exited (%v); log:\n%s", p.Name, err, p.Tail(60))
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not 200 within %s (last: %s); log:\n%s", p.Name, url, timeout, last, p.Tail(60))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// KubectlEnv is Kubectl with extra environment variables (e.g. KUBE_EDITOR
// for a non-interactive `kubectl edit`).
func (c *Cluster) KubectlEnv(ctx context.Context, env []string, stdin string, args ...string) (string, error) {
	kubectl, err := tools.Tool(tools.KubectlBin)
	if err != nil {
		return "", err
	}
	return proc.Run(ctx, kubectl, env, stdin, append([]string{"--kubeconfig=" + c.AdminKubeconfig}, args...)...)
}

// Helm runs the real helm (from the tools bin) against the stack as the
// admin, with HOME and helm's XDG folders inside the stack's Dir, and returns
// its standard output.
func (c *Cluster) Helm(ctx context.Context, args ...string) (string, error) {
	helm, err := tools.Tool(tools.HelmBin)
	if err != nil {
		return "", err
	}
	home := filepath.Join(c.Dir, "helm-home")
	env := []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache", "helm"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config", "helm"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data", "helm"),
		"KUBECONFIG=" + c.AdminKubeconfig,
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	return proc.Run(ctx, helm, env, "", args...)
}
