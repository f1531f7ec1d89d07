// Package node runs the e2e stack's real node (cluster.Options.Node).
//
// A real node: containerd (Debian's 1.6, runc), CNI bridge
// networking, kubelet, kube-proxy and kube-scheduler, with every address of the
// node inside a network namespace the stack creates and deletes.
//
// Network rule: nothing of the node can reach an address outside that
// namespace. The namespace has no link to the host: no veth, no route, no
// default gateway. Its only crossings are forwarders this process runs,
// each a listener on one side and a dialer on the other (netns.go):
//
//	node namespace NodeIP:6443 → host 127.0.0.1:<apiserver>   kubelet, kube-proxy
//	node namespace NodeIP:6444 → host 127.0.0.1:<apiserver>   pods, through the `kubernetes` Service
//	host 127.0.0.1:<random>    → node namespace <addr>         Node.Forward (a test's client)
//
// The `kubernetes` Service (ClusterIP 10.0.0.1, the apiserver runs with
// --endpoint-reconciler-type=none) gets Endpoints written here (NodeIP:6444);
// the controller-manager mirrors them into an EndpointSlice and kube-proxy's
// iptables rules, inside the namespace, send 10.0.0.1:443 there. Pods get
// addresses in PodCIDR on the bridge cni0, inside the namespace too.
package node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"golang.org/x/sys/unix"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/kube"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/internal/proc"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// Node tools: built by test/tools/build.sh from the Go module proxy (kubelet,
// kube-proxy, kube-scheduler from test/tools/kube; crictl from
// test/tools/crictl) or installed from Debian and linked into the tools
// folder (containerd, its runc shim, ctr, runc, buildah, iptables, busybox,
// and cni/, a link to the CNI plugins folder).
const (
	KubeletBin       = "kubelet"
	KubeProxyBin     = "kube-proxy"
	KubeSchedulerBin = "kube-scheduler"
	CrictlBin        = "crictl"
	ContainerdBin    = "containerd"
	CtrBin           = "ctr"
	RuncBin          = "runc"
	BuildahBin       = "buildah"
	BusyboxBin       = "busybox"
	cniDir           = "cni"
)

// Tools lists the tool binaries the node needs (Env.Bins holds their paths).
func Tools() []string {
	return []string{KubeletBin, KubeProxyBin, KubeSchedulerBin, CrictlBin, ContainerdBin, "containerd-shim-runc-v2",
		CtrBin, RuncBin, BuildahBin, BusyboxBin, "iptables", "ip", "nsenter"}
}

// Addresses of the node. They exist only inside the node's network namespace
// (and the pods' namespaces behind its bridge); nothing outside routes to them.
const (
	NodeName = "driftwatch-e2e-node"
	NodeIP   = "10.87.0.1"
	PodCIDR  = "10.88.0.0/16"
	// ServiceCIDR is the apiserver's --service-cluster-ip-range; APIServiceIP
	// the `kubernetes` Service's ClusterIP, its first address.
	ServiceCIDR  = "10.0.0.0/24"
	APIServiceIP = "10.0.0.1"
	// BridgeIP is cni0's address, PodCIDR's first (the bridge plugin's
	// gateway): the one address of the node's namespace pods route to.
	BridgeIP = "10.88.0.1"

	nodeAPIPort    = 6443 // kubelet, kube-proxy → apiserver
	serviceAPIPort = 6444 // pods → `kubernetes` Service → apiserver
)

// PauseImage is the sandbox image containerd runs in every pod, built by
// the stack from test/e2e/images/pause.
const PauseImage = "localhost/driftwatch-e2e/pause:1"

// Node is the stack's real node. Its exported fields are read-only.
type Node struct {
	// Name is the Node object's name; IP its InternalIP (inside the namespace).
	Name, IP string
	// Netns is the network namespace's name (`ip netns exec NAME ...`),
	// NetnsPath its file.
	Netns, NetnsPath string
	// Dir holds the node's state (containerd, kubelet, CNI, buildah storage).
	Dir string
	// ContainerdSocket is containerd's CRI endpoint (a unix socket path).
	ContainerdSocket string
	// PodLogDir is the kubelet's podLogsDir: <ns>_<pod>_<uid>/<container>/N.log.
	PodLogDir string

	env        Env
	bins       map[string]string
	cgroupRoot string // the kubelet's cgroupRoot, created in every hierarchy
	netName    string // the CNI network's name
	containerd *proc.Process
	kubelet    *proc.Process
	kubeProxy  *proc.Process
	scheduler  *proc.Process
	apiFwd     *forwarder
	svcFwd     *forwarder

	mu       sync.Mutex
	forwards []*forwarder
	images   map[string]bool // imported into containerd
	stopped  bool
}

// Env is what the node needs of the control plane it joins.
type Env struct {
	// Dir is the stack's folder (the node's state goes in Dir/node), LogDir
	// the folder of the process logs.
	Dir, LogDir string
	// AdminKubeconfig, AdminConfig and Client are the stack's admin
	// identity; CA signs the node's client certificates.
	AdminKubeconfig string
	AdminConfig     *rest.Config
	Client          kubernetes.Interface
	CA              *kube.CA
	// APIPort is kube-apiserver's port on 127.0.0.1.
	APIPort int
	// Bins maps every name of Tools to its path.
	Bins map[string]string
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.Dir}, elem...)...) }

// Start starts the node; the apiserver and controller-manager run. The Node
// is returned on error too once anything of it exists: Stop tears it down.
func Start(ctx context.Context, env Env) (*Node, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("Options.Node needs root (a network namespace, mounts, cgroups, containers)")
	}
	n := &Node{env: env, bins: env.Bins}
	return n, n.start(ctx)
}

func (n *Node) start(ctx context.Context) error {
	env, bins := n.env, n.bins
	t0 := time.Now()
	suffix := strings.TrimPrefix(filepath.Base(env.Dir), "driftwatch-e2e-")
	n.Name, n.IP = NodeName, NodeIP
	n.Netns = "driftwatch-e2e-" + suffix
	n.Dir = filepath.Join(env.Dir, "node")
	n.cgroupRoot = "/driftwatch-e2e-" + suffix
	n.netName = "driftwatch-e2e-" + suffix
	n.images = map[string]bool{}
	n.NetnsPath = filepath.Join("/run/netns", n.Netns)
	n.ContainerdSocket = n.path("containerd", "containerd.sock")
	n.PodLogDir = n.path("pod-logs")
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volume-plugins", "pki", "buildah", "images"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}

	// The network namespace: loopback up, the node's address on it, IP
	// forwarding and bridged traffic through iptables (kube-proxy's rules).
	if out, err := exec.Command(bins["ip"], "netns", "add", n.Netns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %w: %s", n.Netns, err, out)
	}
	for _, args := range [][]string{
		{"-n", n.Netns, "link", "set", "lo", "up"},
		{"-n", n.Netns, "addr", "add", NodeIP + "/32", "dev", "lo"},
		// Connections the node itself opens to a ClusterIP (Forward, the
		// readiness check below) need a route before kube-proxy's OUTPUT DNAT
		// rewrites them to a pod or to NodeIP; a real node has its default
		// route, this namespace has none. Pods route through their gateway.
		{"-n", n.Netns, "route", "add", ServiceCIDR, "dev", "lo"},
	} {
		if out, err := exec.Command(bins["ip"], args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	// br_netfilter is built into this VM's kernel; on distribution kernels it
	// is a module nothing loads on demand (kubeadm's preflight asks for it).
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); errors.Is(err, os.ErrNotExist) {
		if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
			return fmt.Errorf("the node needs br_netfilter (bridged pod traffic through kube-proxy's iptables rules): modprobe br_netfilter: %w: %s", err, out)
		}
	}
	if err := inNetns(n.NetnsPath, func() error {
		for _, s := range []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables"} {
			if err := os.WriteFile("/proc/sys/"+s, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("sysctls of the node's network namespace: %w", err)
	}

	// The forwarders to the apiserver.
	api := fmt.Sprintf("127.0.0.1:%d", env.APIPort)
	dialAPI := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", api)
	}
	for _, f := range []struct {
		port int
		dst  **forwarder
		name string
	}{{nodeAPIPort, &n.apiFwd, "node→apiserver"}, {serviceAPIPort, &n.svcFwd, "pods→apiserver"}} {
		l, err := listenIn(n.NetnsPath, net.JoinHostPort(NodeIP, strconv.Itoa(f.port)))
		if err != nil {
			return fmt.Errorf("forwarder %s: %w", f.name, err)
		}
		*f.dst = newForwarder(f.name, l, dialAPI)
	}

	// The kubelet's cgroup root, in every cgroup v1 hierarchy (it must exist).
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}

	// Identities: the kubelet as system:node:<name> (Node authorizer), kube-proxy
	// as system:kube-proxy (bound to system:node-proxier by default).
	nodeURL := fmt.Sprintf("https://%s:%d", NodeIP, nodeAPIPort)
	for _, id := range []struct{ file, cn, group string }{
		{"kubelet.kubeconfig", "system:node:" + NodeName, "system:nodes"},
		{"kube-proxy.kubeconfig", "system:kube-proxy", ""},
	} {
		var groups []string
		if id.group != "" {
			groups = []string{id.group}
		}
		if _, err := env.CA.ClientKubeconfig(n.path(id.file), nodeURL, id.cn, groups); err != nil {
			return err
		}
	}
	if err := os.WriteFile(n.path("pki", "ca.crt"), env.CA.CertPEM, 0o644); err != nil {
		return err
	}

	// containerd, with the CNI bridge, in the namespace.
	if err := n.writeContainerdConfig(); err != nil {
		return err
	}
	path := []string{"PATH=" + tools.ToolsBin() + ":" + os.Getenv("PATH")}
	n.containerd = n.inNode("containerd", bins[ContainerdBin], path, "--config", n.path("containerd", "config.toml"))
	if err := n.containerd.Start(); err != nil {
		return err
	}
	if err := proc.WaitFor(ctx, 60*time.Second, "containerd's CRI", n.containerd, func(ctx context.Context) (bool, error) {
		_, err := n.Crictl(ctx, "info")
		return err == nil, err
	}); err != nil {
		return err
	}
	tContainerd := time.Now()

	// The sandbox image.
	if err := n.buildPause(ctx); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	tPause := time.Now()

	// kube-scheduler on the host (it only talks to the apiserver).
	n.scheduler = &proc.Process{
		Name: "kube-scheduler", Path: bins[KubeSchedulerBin], LogPath: filepath.Join(env.LogDir, "kube-scheduler.log"),
		Args: []string{
			"--kubeconfig=" + env.AdminKubeconfig,
			"--leader-elect=false",
			"--secure-port=0",
			"--bind-address=127.0.0.1",
		},
	}
	if err := n.scheduler.Start(); err != nil {
		return err
	}

	// The kubelet.
	if err := n.writeKubeletConfig(); err != nil {
		return err
	}
	n.kubelet = n.inNode("kubelet", bins[KubeletBin], path,
		"--config="+n.path("kubelet.yaml"),
		"--kubeconfig="+n.path("kubelet.kubeconfig"),
		"--root-dir="+n.path("kubelet"),
		"--cert-dir="+n.path("kubelet", "pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
		"--v=2",
	)
	if err := n.kubelet.Start(); err != nil {
		return err
	}
	if err := proc.WaitFor(ctx, 3*time.Minute, "the node to register and be Ready (kubelet)", n.kubelet, func(ctx context.Context) (bool, error) {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return false, fmt.Errorf("Ready=%s: %s: %s", cond.Status, cond.Reason, cond.Message)
				}
				return true, nil
			}
		}
		return false, errors.New("no Ready condition yet")
	}); err != nil {
		return err
	}
	tKubelet := time.Now()

	// kube-proxy, and the `kubernetes` Service's endpoints.
	if err := n.writeKubeProxyConfig(); err != nil {
		return err
	}
	n.kubeProxy = n.inNode("kube-proxy", bins[KubeProxyBin], path, "--config="+n.path("kube-proxy.yaml"), "--v=2")
	if err := n.kubeProxy.Start(); err != nil {
		return err
	}
	if err := n.writeAPIEndpoints(ctx); err != nil {
		return fmt.Errorf("endpoints of the kubernetes Service: %w", err)
	}
	// In-cluster clients dial 10.0.0.1:443: wait until that reaches the
	// apiserver from inside the namespace (kube-proxy's rules, the mirrored
	// EndpointSlice, the forwarder).
	client := n.apiClient()
	if err := proc.WaitFor(ctx, 2*time.Minute, "the kubernetes Service from inside the node (kube-proxy)", n.kubeProxy, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+APIServiceIP+":443/readyz", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", resp.Status, b)
		}
		return true, nil
	}); err != nil {
		return err
	}
	env.Logf("node up in %s (containerd %s, pause image %s, kubelet Ready %s, kube-proxy and the kubernetes Service %s)",
		time.Since(t0).Round(time.Millisecond), tContainerd.Sub(t0).Round(time.Millisecond), tPause.Sub(tContainerd).Round(time.Millisecond),
		tKubelet.Sub(tPause).Round(time.Millisecond), time.Since(tKubelet).Round(time.Millisecond))
	return nil
}

// inNode is a process run inside the node's network namespace (nsenter
// --net: the host's mount namespace, so the kubelet's and containerd's mounts
// are the same, as on a real node).
func (n *Node) inNode(name, path string, env []string, args ...string) *proc.Process {
	return &proc.Process{
		Name: name, Path: n.bins["nsenter"], Env: env,
		Args:    append([]string{"--net=" + n.NetnsPath, "--", path}, args...),
		LogPath: filepath.Join(n.env.LogDir, name+".log"),
	}
}

func (n *Node) makeCgroupRoot() error {
	hier, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hier {
		d := filepath.Join(h, n.cgroupRoot)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cgroup root: %w", err)
		}
		if filepath.Base(h) == "cpuset" {
			// A new v1 cpuset has no CPUs or memory nodes: copy the parent's.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return fmt.Errorf("cgroup root %s: %w", f, err)
				}
			}
		}
	}
	return nil
}

// cgroupHierarchies lists the mount points of the cgroup (v1) and cgroup2
// file systems under /sys/fs/cgroup.
func cgroupHierarchies() ([]string, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if (m.fstype == "cgroup" || m.fstype == "cgroup2") && strings.HasPrefix(m.point, "/sys/fs/cgroup") {
			out = append(out, m.point)
		}
	}
	return out, nil
}

type mountEntry struct{ point, root, fstype string }

func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mountEntry{point: unescapeMount(fields[4]), root: unescapeMount(fields[3]), fstype: fields[sep+1]})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) []string {
	mounts, _ := readMountinfo()
	var out []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func (n *Node) writeContainerdConfig() error {
	d := n.path("containerd")
	cfg := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Pod network namespaces under the state folder, not /var/run/netns.
  netns_mounts_under_state_dir = true
  # This VM's bounding set lacks CAP_SYS_RESOURCE: runc cannot lower a
  # container's oom_score_adj below containerd's own (the pause container asks
  # for -998), so keep every adjustment at or above containerd's.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[6]q
        Root = %[7]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
    max_conf_num = 1
`, filepath.Join(d, "root"), filepath.Join(d, "state"), n.ContainerdSocket, filepath.Join(d, "opt"),
		PauseImage, n.bins[RuncBin], filepath.Join(d, "runc"), filepath.Join(tools.ToolsBin(), cniDir), n.path("cni", "net.d"))
	if err := os.WriteFile(filepath.Join(d, "config.toml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	// The bridge: cni0 with the gateway address, pods in PodCIDR, IP
	// allocations kept in the node's folder; no masquerading (nothing leaves).
	// Pods get no default route: besides their own subnet, only the Service
	// range, through the gateway (kube-proxy's rules are in the node's
	// namespace).
	cni := map[string]any{
		"cniVersion": "0.4.0",
		"name":       n.netName,
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": PodCIDR}}},
				"routes":  []map[string]string{{"dst": ServiceCIDR}},
				"dataDir": n.path("cni", "ipam"),
			},
		}},
	}
	b, err := json.MarshalIndent(cni, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "net.d", "10-bridge.conflist"), b, 0o644)
}

func (n *Node) writeKubeletConfig() error {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This VM mounts cgroup v1; kubelet v1.37 refuses it unless told otherwise.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
podLogsDir: %[3]s
volumePluginDir: %[4]s
address: %[5]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]s}
authorization:
  mode: Webhook
# No cluster DNS here, and no resolver of the host inside the namespace.
resolvConf: ""
clusterDomain: cluster.local
# No CAP_SYS_RESOURCE in this VM (see containerd's restrict_oom_score_adj).
oomScoreAdj: 0
failSwapOn: false
# A shared test machine's disk may be fuller than the default thresholds.
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
  imagefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Secret volumes are refreshed on the pod's sync (default every minute):
# shortened so a test sees the refresh in seconds.
syncFrequency: 5s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
`, n.cgroupRoot, n.ContainerdSocket, n.PodLogDir, n.path("volume-plugins"), NodeIP, n.path("pki", "ca.crt"))
	return os.WriteFile(n.path("kubelet.yaml"), []byte(cfg), 0o644)
}

func (n *Node) writeKubeProxyConfig() error {
	cfg := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
mode: iptables
clusterCIDR: %[3]s
bindAddress: %[4]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [primary]
# No CAP_SYS_RESOURCE in this VM; conntrack limits are the host's business.
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  syncPeriod: 30s
  minSyncPeriod: 0s
`, n.path("kube-proxy.kubeconfig"), NodeName, PodCIDR, NodeIP)
	return os.WriteFile(n.path("kube-proxy.yaml"), []byte(cfg), 0o644)
}

// writeAPIEndpoints gives the `kubernetes` Service its endpoint: the
// forwarder inside the namespace. The apiserver (--endpoint-reconciler-type=none)
// writes none itself.
func (n *Node) writeAPIEndpoints(ctx context.Context) error {
	ep := &corev1.Endpoints{ //nolint:staticcheck // the apiserver's own reconciler writes Endpoints too; the controller-manager mirrors them
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
			Addresses: []corev1.EndpointAddress{{IP: NodeIP}},                                                     //nolint:staticcheck
			Ports:     []corev1.EndpointPort{{Name: "https", Port: serviceAPIPort, Protocol: corev1.ProtocolTCP}}, //nolint:staticcheck
		}},
	}
	eps := n.env.Client.CoreV1().Endpoints(metav1.NamespaceDefault) //nolint:staticcheck
	_, err := eps.Create(ctx, ep, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = eps.Update(ctx, ep, metav1.UpdateOptions{})
	}
	return err
}

// apiClient is an admin HTTPS client whose connections start inside the node's
// namespace.
func (n *Node) apiClient() *http.Client {
	rt := n.HTTPClient().Transport.(*http.Transport)
	if cfg, err := rest.TLSConfigFor(n.env.AdminConfig); err == nil {
		rt.TLSClientConfig = cfg
	}
	return &http.Client{Transport: rt, Timeout: 10 * time.Second}
}

// HTTPClient returns a client whose connections are dialled from inside the
// node's network namespace (pod IPs, Service ClusterIPs).
func (n *Node) HTTPClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dialIn(ctx, n.NetnsPath, addr)
			},
			DisableKeepAlives: true,
		},
	}
}

// HTTPClientIn returns a client whose connections are dialled from inside
// the network namespace at path (a pod's, from PodNetns): they leave through
// that pod's interface with its address, as the pod's own would.
func (n *Node) HTTPClientIn(path string) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dialIn(ctx, path, addr)
			},
			DisableKeepAlives: true,
		},
	}
}

// Dial dials addr (an IP literal and port) from inside the node's namespace.
func (n *Node) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return dialIn(ctx, n.NetnsPath, addr)
}

// Forward listens on 127.0.0.1 on the host and forwards every connection to
// addr (an IP literal and port: a pod IP, a Service ClusterIP) dialled inside
// the node's namespace. It returns the host address; the forwarder closes when
// the test ends.
func (n *Node) Forward(t testing.TB, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newForwarder("→"+addr, l, func(ctx context.Context) (net.Conn, error) { return dialIn(ctx, n.NetnsPath, addr) })
	n.mu.Lock()
	n.forwards = append(n.forwards, f)
	n.mu.Unlock()
	t.Cleanup(f.close)
	return f.Addr()
}

// Expose listens inside the node's namespace on the bridge's address (a free
// port) and forwards every connection to hostAddr on the host's loopback: a
// service outside the node (an Alertmanager run by the test) that pods reach
// at the returned BridgeIP:port (pods have no route to NodeIP), e.g. through
// a selector-less Service's Endpoints. The bridge exists once a pod ran. The
// forwarder closes when the test ends.
func (n *Node) Expose(t testing.TB, hostAddr string) string {
	t.Helper()
	l, err := listenIn(n.NetnsPath, net.JoinHostPort(BridgeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	f := newForwarder("←"+hostAddr, l, func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		return d.DialContext(ctx, "tcp", hostAddr)
	})
	n.mu.Lock()
	n.forwards = append(n.forwards, f)
	n.mu.Unlock()
	t.Cleanup(f.close)
	return f.Addr()
}

// PauseServiceAPI cuts (true) or restores (false) the pods' path to the
// apiserver through the `kubernetes` Service: while cut, connections to
// 10.0.0.1:443 from pods are closed at once (as an apiserver that is
// unreachable from the cluster network). The kubelet keeps its own path.
func (n *Node) PauseServiceAPI(paused bool) { n.svcFwd.setPaused(paused) }

// RunIP runs `ip` with args inside the node's network namespace (`ip -n
// NAME ...`) and returns its standard output.
func (n *Node) RunIP(ctx context.Context, args ...string) (string, error) {
	return proc.Run(ctx, n.bins["ip"], nil, "", append([]string{"-n", n.Netns}, args...)...)
}

// Crictl runs crictl against the node's containerd and returns its standard output.
func (n *Node) Crictl(ctx context.Context, args ...string) (string, error) {
	ep := "unix://" + n.ContainerdSocket
	return proc.Run(ctx, n.bins[CrictlBin], nil, "",
		append([]string{"--runtime-endpoint", ep, "--image-endpoint", ep, "--timeout", "30s"}, args...)...)
}

// PodNetns returns the path of a pod's network namespace (containerd's
// sandbox), given the pod's namespace and name.
func (n *Node) PodNetns(ctx context.Context, namespace, pod string) (string, error) {
	id, err := n.Crictl(ctx, "pods", "--namespace", namespace, "--name", pod, "--state", "ready", "-q")
	if err != nil {
		return "", err
	}
	ids := strings.Fields(id)
	if len(ids) != 1 {
		return "", fmt.Errorf("crictl pods %s/%s: %d ready sandboxes", namespace, pod, len(ids))
	}
	out, err := n.Crictl(ctx, "inspectp", ids[0])
	if err != nil {
		return "", err
	}
	var v struct {
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string } `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return "", fmt.Errorf("crictl inspectp %s: %w", ids[0], err)
	}
	for _, ns := range v.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path, nil
		}
	}
	return "", fmt.Errorf("sandbox %s of %s/%s has no network namespace path", ids[0], namespace, pod)
}

// RunIPIn runs `ip` with args inside the network namespace at path (a pod's).
func (n *Node) RunIPIn(ctx context.Context, path string, args ...string) (string, error) {
	return proc.Run(ctx, n.bins["nsenter"], nil, "", append([]string{"--net=" + path, "--", n.bins["ip"]}, args...)...)
}

// ContainerPID returns the host PID of a running container's first process,
// given the container ID of a pod's status (containerd://ID or ID).
func (n *Node) ContainerPID(ctx context.Context, containerID string) (int, error) {
	id := containerID[strings.LastIndex(containerID, "/")+1:]
	out, err := n.Crictl(ctx, "inspect", id)
	if err != nil {
		return 0, err
	}
	var v struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return 0, fmt.Errorf("crictl inspect %s: %w", id, err)
	}
	if v.Info.Pid == 0 {
		return 0, fmt.Errorf("crictl inspect %s: no pid (not running?)", id)
	}
	return v.Info.Pid, nil
}

// PodLog returns what a container of a pod wrote (every log file the kubelet
// kept for it, oldest first, in the CRI log format: "TIME STREAM TAG LINE").
func (n *Node) PodLog(namespace, pod string, uid string, container string) (string, error) {
	dir := filepath.Join(n.PodLogDir, fmt.Sprintf("%s_%s_%s", namespace, pod, uid), container)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	type logFile struct {
		n    int
		name string
	}
	var files []logFile
	for _, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".log")
		i, err := strconv.Atoi(base)
		if err != nil || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		files = append(files, logFile{i, e.Name()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].n < files[j].n })
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return "", err
		}
		b.Write(data)
	}
	return b.String(), nil
}

// Stop tears the node down (the stack's teardown calls it): kubelet first (so nothing restarts containers),
// then every pod sandbox through CRI (containers killed, CNI DEL, pod network
// namespaces removed), kube-proxy, the scheduler, containerd, any shim left,
// then mounts under Dir, the network namespace (its bridge, veths and iptables
// rules go with it), the cgroups, the kubelet's /var/log/containers links and
// its device plugin socket (both outside Dir: paths the kubelet hard-codes).
func (n *Node) Stop() {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.stopped = true
	fwds := append([]*forwarder(nil), n.forwards...)
	n.mu.Unlock()
	logf := n.env.Logf
	if n.kubelet != nil {
		n.kubelet.Stop(15 * time.Second)
	}
	if n.containerd != nil && n.containerd.PID() != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		if out, err := n.Crictl(ctx, "rmp", "--all", "--force"); err != nil {
			logf("node teardown: crictl rmp: %v\n%s", err, out)
		}
		cancel()
	}
	for _, p := range []*proc.Process{n.kubeProxy, n.scheduler, n.containerd} {
		if p != nil {
			p.Stop(15 * time.Second)
		}
	}
	// Shims are started in a session of their own: they outlive containerd if
	// a sandbox could not be removed. Their command line names the socket.
	for _, pid := range pidsMentioning(n.Dir) {
		logf("node teardown: killing leftover pid %d", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitPIDsGone(pidsMentioning(n.Dir), 10*time.Second)
	for _, f := range fwds {
		f.close()
	}
	for _, f := range []*forwarder{n.apiFwd, n.svcFwd} {
		if f != nil {
			f.close()
		}
	}
	for _, m := range mountsUnder(n.env.Dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			logf("node teardown: unmount %s: %v", m, err)
		}
	}
	if n.Netns != "" {
		if _, err := os.Stat(n.NetnsPath); err == nil {
			if out, err := exec.Command(n.bins["ip"], "netns", "delete", n.Netns).CombinedOutput(); err != nil {
				logf("node teardown: ip netns delete %s: %v: %s", n.Netns, err, out)
			}
		}
	}
	if err := n.removeCgroups(); err != nil {
		logf("node teardown: %v", err)
	}
	for _, l := range n.containerLogLinks() {
		_ = os.Remove(l)
	}
	if staleSocket(kubeletDevicePluginSocket) {
		_ = os.Remove(kubeletDevicePluginSocket)
	}
}

// kubeletDevicePluginSocket is the kubelet's device plugin registration
// socket: a path it does not let one configure (--root-dir does not move it).
const kubeletDevicePluginSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"

// staleSocket reports whether path is a unix socket no process listens on
// (a running kubelet of the host's own keeps its socket).
func staleSocket(path string) bool {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

// removeCgroups removes the cgroup root and everything under it, deepest
// first, in every hierarchy (a cgroup can be removed once its tasks are gone).
func (n *Node) removeCgroups() error {
	hier, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var failed []string
	for _, h := range hier {
		root := filepath.Join(h, n.cgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for range 50 {
				if err = unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", d, err))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("cgroups left: %s", strings.Join(failed, "; "))
	}
	return nil
}

// containerLogLinks lists the kubelet's symlinks in /var/log/containers (a
// path it does not let one configure) that point into the stack.
func (n *Node) containerLogLinks() []string {
	entries, _ := os.ReadDir("/var/log/containers")
	var out []string
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, n.env.Dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// Leftovers lists what the node left behind after Stop (the stack's
// teardown check).
func (n *Node) Leftovers() []string {
	var out []string
	if _, err := os.Stat(n.NetnsPath); err == nil {
		out = append(out, "network namespace "+n.Netns)
	}
	for _, m := range mountsUnder(n.env.Dir) {
		out = append(out, "mount "+m)
	}
	if hier, err := cgroupHierarchies(); err == nil {
		for _, h := range hier {
			if _, err := os.Stat(filepath.Join(h, n.cgroupRoot)); err == nil {
				out = append(out, "cgroup "+filepath.Join(h, n.cgroupRoot))
			}
		}
	}
	for _, l := range n.containerLogLinks() {
		out = append(out, "log link "+l)
	}
	if staleSocket(kubeletDevicePluginSocket) {
		out = append(out, "stale kubelet socket "+kubeletDevicePluginSocket)
	}
	if entries, err := os.ReadDir("/var/lib/cni/results"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), n.netName+"-") {
				out = append(out, "CNI cache /var/lib/cni/results/"+e.Name())
			}
		}
	}
	return out
}

// pidsMentioning lists the processes whose command line mentions s (not this one).
func pidsMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

func waitPIDsGone(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Processes lists the node's processes (nil-safe), for the stack's
// teardown, its PIDs and its log tails.
func (n *Node) Processes() []*proc.Process {
	if n == nil {
		return nil
	}
	return []*proc.Process{n.containerd, n.kubelet, n.kubeProxy, n.scheduler}
}
