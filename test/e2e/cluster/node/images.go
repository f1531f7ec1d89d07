package node

// Images for the node, built offline: no registry can be reached from this
// machine, so every image is built here with buildah (storage inside the
// node's folder) and imported into containerd with ctr, as one side-loads
// images onto a node.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Buildah runs buildah with the node's own storage (inside Dir) and returns
// its standard output. RUN steps use runc: Debian's default, crun, refuses
// this VM's hybrid cgroup layout.
func (n *Node) Buildah(ctx context.Context, args ...string) (string, error) {
	global := []string{
		"--root", n.path("buildah", "root"),
		"--runroot", n.path("buildah", "run"),
		"--storage-driver", "overlay",
	}
	return proc.Run(ctx, n.bins[BuildahBin], nil, "", append(global, args...)...)
}

// ImageFile is one file or folder of an image: host path Src copied to Dst.
type ImageFile struct {
	Src, Dst string
}

// ScratchImage builds image ref FROM scratch holding the given host folder's
// content at / (root may be "") and the files, with entrypoint, user and env,
// and imports it into containerd.
func (n *Node) ScratchImage(ctx context.Context, ref, root string, files []ImageFile, entrypoint []string, user string, env []string) error {
	ctr, err := n.Buildah(ctx, "from", "scratch")
	if err != nil {
		return err
	}
	ctr = strings.TrimSpace(ctr)
	defer func() { _, _ = n.Buildah(context.Background(), "rm", ctr) }()
	if root != "" {
		if _, err := n.Buildah(ctx, "copy", ctr, root+"/", "/"); err != nil {
			return err
		}
	}
	for _, f := range files {
		if _, err := n.Buildah(ctx, "copy", ctr, f.Src, f.Dst); err != nil {
			return err
		}
	}
	cfg := []string{"config"}
	if len(entrypoint) > 0 {
		ep := `["` + strings.Join(entrypoint, `","`) + `"]`
		cfg = append(cfg, "--entrypoint", ep)
	}
	if user != "" {
		cfg = append(cfg, "--user", user)
	}
	for _, e := range env {
		cfg = append(cfg, "--env", e)
	}
	if _, err := n.Buildah(ctx, append(cfg, ctr)...); err != nil {
		return err
	}
	if _, err := n.Buildah(ctx, "commit", "--quiet", ctr, ref); err != nil {
		return err
	}
	return nil
}

// ImportImage copies image ref from buildah's storage into containerd's
// k8s.io namespace (a docker-archive, `ctr images import`), where the
// kubelet finds it without pulling.
func (n *Node) ImportImage(ctx context.Context, ref string) error {
	archive := filepath.Join(n.path("images"), strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	if _, err := n.Buildah(ctx, "push", "--quiet", ref, "docker-archive:"+archive+":"+ref); err != nil {
		return err
	}
	defer os.Remove(archive)
	if _, err := proc.Run(ctx, n.bins[CtrBin], nil, "", "--address", n.ContainerdSocket, "--namespace", "k8s.io",
		"images", "import", archive); err != nil {
		return err
	}
	n.mu.Lock()
	n.images[ref] = true
	n.mu.Unlock()
	return nil
}

// GoBinary builds a main package of this repository (e.g.
// "./test/e2e/images/envnames") as a static binary into the node's folder.
func (n *Node) GoBinary(ctx context.Context, pkg string) (string, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(n.path("images"), "bin", filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// buildPause builds the pod sandbox image from test/e2e/images/pause and
// imports it.
func (n *Node) buildPause(ctx context.Context) error {
	bin, err := n.GoBinary(ctx, "./test/e2e/images/pause")
	if err != nil {
		return err
	}
	if err := n.ScratchImage(ctx, PauseImage, "", []ImageFile{{Src: bin, Dst: "/pause"}}, []string{"/pause"}, "65535:65535", nil); err != nil {
		return err
	}
	return n.ImportImage(ctx, PauseImage)
}

// Local stand-ins for the Dockerfile's public base images, built by
// BaseImages.
const (
	// GoImage stands in for golang:1.26: busybox as /bin/sh for RUN steps,
	// the golang image's PATH and GOPATH, GOPROXY=file:///var/cache/goproxy
	// and an empty /usr/local/go. BuildDockerfile mounts this machine's Go
	// toolchain (GOROOT) read-only at /usr/local/go, where the golang image
	// has it, and the host's module download cache as the GOPROXY, so `go mod
	// download` works offline. Mounting rather than copying the 270 MB
	// toolchain into the image saved 20-58 s per run here (load 12-25).
	GoImage = "localhost/driftwatch-e2e/golang:local"
	// StaticImage stands in for gcr.io/distroless/static-debian12:nonroot:
	// /etc/passwd and /etc/group with root, nobody and nonroot (65532), /tmp,
	// /home/nonroot, the CA certificates; user 65532.
	StaticImage = "localhost/driftwatch-e2e/static:nonroot"
)

// BaseImages builds GoImage and StaticImage (in buildah's storage only).
func (n *Node) BaseImages(ctx context.Context) error {
	busybox := n.bins[BusyboxBin]
	if p, err := filepath.EvalSymlinks(busybox); err == nil {
		busybox = p
	}

	goFS := n.path("images", "go-fs")
	if err := writeTree(goFS, map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":  "root:x:0:\n",
	}, []string{"tmp", "root", "bin", "usr/local/go"}); err != nil {
		return err
	}
	if err := copyFile(busybox, filepath.Join(goFS, "bin", "sh"), 0o755); err != nil {
		return err
	}
	if err := n.ScratchImage(ctx, GoImage, goFS, nil, nil, "",
		[]string{"PATH=/usr/local/go/bin:/go/bin:/bin", "GOPATH=/go", "GOTOOLCHAIN=local",
			"GOPROXY=file:///var/cache/goproxy", "GOSUMDB=off"}); err != nil {
		return err
	}

	staticFS := n.path("images", "static-fs")
	if err := writeTree(staticFS, map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":  "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
	}, []string{"tmp", "home/nonroot", "etc/ssl/certs"}); err != nil {
		return err
	}
	if err := os.Chown(filepath.Join(staticFS, "home", "nonroot"), 65532, 65532); err != nil {
		return err
	}
	if b, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		if err := os.WriteFile(filepath.Join(staticFS, "etc", "ssl", "certs", "ca-certificates.crt"), b, 0o644); err != nil {
			return err
		}
	}
	return n.ScratchImage(ctx, StaticImage, staticFS, nil, nil, "65532:65532", nil)
}

// BuildDockerfile builds the repository's Dockerfile as ref with `buildah
// bud`, offline (--network none, --pull=never), the base images replaced by
// GoImage and StaticImage through the Dockerfile's GO_IMAGE and BASE_IMAGE
// arguments, the host's Go toolchain mounted read-only where the golang
// image has it, the host's module download cache mounted read-only as the
// build's GOPROXY and the host's Go build cache as the build's (a cache
// mount, as BuildKit users add: it changes no output), and imports it. It
// returns how long the build took.
func (n *Node) BuildDockerfile(ctx context.Context, ref string, buildArgs map[string]string) (time.Duration, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return 0, err
	}
	modcache, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return 0, err
	}
	gocache, err := exec.CommandContext(ctx, "go", "env", "GOCACHE").Output()
	if err != nil {
		return 0, err
	}
	goroot, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return 0, err
	}
	proxy := filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download")
	args := []string{"bud", "--runtime", n.bins[RuncBin], "--network", "none", "--pull=never", "--layers=false",
		"-f", filepath.Join(root, "Dockerfile"),
		"--build-arg", "GO_IMAGE=" + GoImage, "--build-arg", "BASE_IMAGE=" + StaticImage,
		"-v", strings.TrimSpace(string(goroot)) + ":/usr/local/go:ro",
		"-v", proxy + ":/var/cache/goproxy:ro",
		"-v", strings.TrimSpace(string(gocache)) + ":/root/.cache/go-build",
		"-t", ref}
	for k, v := range buildArgs {
		args = append(args, "--build-arg", k+"="+v)
	}
	t0 := time.Now()
	if out, err := n.Buildah(ctx, append(args, root)...); err != nil {
		return 0, fmt.Errorf("%w\n%s", err, out)
	}
	d := time.Since(t0)
	return d, n.ImportImage(ctx, ref)
}

func writeTree(dir string, files map[string]string, dirs []string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		return err
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}
