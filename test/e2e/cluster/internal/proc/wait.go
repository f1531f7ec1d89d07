package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitFor polls cond every 100 ms until it holds, the timeout passes, or p
// (if not nil) exits.
func WaitFor(ctx context.Context, timeout time.Duration, what string, p *Process, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if p != nil {
			if gone, werr := p.Exited(); gone {
				return false, fmt.Errorf("%s exited (%v)", p.Name, werr)
			}
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		ok, err := cond(cctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// WaitHTTP waits (WaitFor) until GET url answers 200.
func WaitHTTP(ctx context.Context, timeout time.Duration, p *Process, url string) error {
	return WaitFor(ctx, timeout, url, p, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		}
		return true, nil
	})
}

// WaitTCP waits (WaitFor) until addr accepts a TCP connection.
func WaitTCP(ctx context.Context, timeout time.Duration, p *Process, addr string) error {
	return WaitFor(ctx, timeout, addr, p, func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
}

// Run runs path with args to completion, with env added to this process's
// environment and stdin (if not empty) on its standard input, and returns
// its standard output; a failure's error carries its standard error.
func Run(ctx context.Context, path string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
