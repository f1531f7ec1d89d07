package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// inNetns runs f on an OS thread switched into the network namespace at
// path, then switches the thread back. A socket keeps the namespace it was
// created in: a listener created in f accepts connections there, a
// connection dialled in f talks there, whichever goroutine uses them later.
//
// The thread must come back rather than exit: the stack's children are
// started with Pdeathsig, which the kernel sends when the *thread* that
// forked them exits, and an exiting locked thread would be such a thread
// (golang/go#27505). Only if the switch back fails is the thread left locked,
// to be discarded.
func inNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open network namespace %s: %w", path, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("join network namespace %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stay locked: the runtime discards the thread with this goroutine.
			errc <- fmt.Errorf("return from network namespace %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// listenIn listens on a TCP address inside the network namespace at path.
func listenIn(path, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNetns(path, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// dialIn dials a TCP address (an IP literal) from inside the network
// namespace at path.
func dialIn(ctx context.Context, path, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(path, func() error {
		var err error
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// forwarder copies TCP connections accepted on one listener to connections
// it dials: the only crossing between the node's network namespace and the
// host's loopback (apiserver ← kubelet, kube-proxy and pods; a test's
// client → a Service inside the node). It can be paused: while paused, new
// connections are closed at once and the open ones are cut.
type forwarder struct {
	name string
	l    net.Listener
	dial func(ctx context.Context) (net.Conn, error)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	paused bool
	closed bool
	wg     sync.WaitGroup
}

func newForwarder(name string, l net.Listener, dial func(ctx context.Context) (net.Conn, error)) *forwarder {
	f := &forwarder{name: name, l: l, dial: dial, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f
}

// Addr is the listening address.
func (f *forwarder) Addr() string { return f.l.Addr().String() }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		in, err := f.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f.wg.Add(1)
		go f.handle(in)
	}
}

func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.paused {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *forwarder) handle(in net.Conn) {
	defer f.wg.Done()
	if !f.track(in) {
		in.Close()
		return
	}
	defer f.untrack(in)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	out, err := f.dial(ctx)
	cancel()
	if err != nil {
		return
	}
	if !f.track(out) {
		out.Close()
		return
	}
	defer f.untrack(out)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

// setPaused pauses or resumes the forwarder; pausing cuts the open
// connections.
func (f *forwarder) setPaused(p bool) {
	f.mu.Lock()
	f.paused = p
	var cut []net.Conn
	if p {
		for c := range f.conns {
			cut = append(cut, c)
		}
	}
	f.mu.Unlock()
	for _, c := range cut {
		c.Close()
	}
}

// close stops listening, cuts every connection and waits for the copies to end.
func (f *forwarder) close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	var cut []net.Conn
	for c := range f.conns {
		cut = append(cut, c)
	}
	f.mu.Unlock()
	f.l.Close()
	for _, c := range cut {
		c.Close()
	}
	f.wg.Wait()
}
