package transform

// The wire decoder of Pods: the record of a v1 Pod read from its protobuf
// encoding (field numbers from k8s.io/api/core/v1/generated.proto). Only the
// fields the record is made of are read; everything else of the spec and status
// is skipped without being decoded.

import (
	"github.com/driftwatch/driftwatch/internal/model"
)

// Field numbers.
const (
	podMetadata = 1
	podSpec     = 2
	podStatusF  = 3

	specVolumes             = 1
	specContainers          = 2
	specServiceAccountName  = 8
	specImagePullSecrets    = 15
	specInitContainers      = 20
	specEphemeralContainers = 34

	volName   = 1
	volSource = 2

	vsSecret    = 6
	vsProjected = 26

	ctrName         = 1
	ctrEnv          = 7
	ctrVolumeMounts = 9
	ctrEnvFrom      = 19

	statusPhase        = 1
	statusStartTime    = 7
	statusContainers   = 8
	statusInit         = 10
	statusEphemeral    = 13
	csName             = 1
	csState            = 2
	stateRunning       = 2
	runningStartedAt   = 1
	ephemeralCommon    = 1
	envValueFrom       = 3
	sourceSecretKeyRef = 4
	envFromSecretRef   = 3
	mountName          = 1
	mountSubPath       = 4
	mountSubPathExpr   = 6
	secretVolName      = 1
	secretVolItems     = 2
	secretVolOptional  = 4
	projSources        = 1
	projectionSecret   = 1
	secretProjRef      = 1
	secretProjItems    = 2
	secretProjOptional = 4
	keySelRef          = 1
	keySelKey          = 2
	keySelOptional     = 3
	envSourceRef       = 1
	envSourceOptional  = 2
	localObjectRefName = 1
	ktpKey             = 1
)

func (s *wireScratch) resetPod() {
	pp := &s.pod
	pp.volumes = pp.volumes[:0]
	pp.containers = pp.containers[:0]
	pp.imagePullSecrets = pp.imagePullSecrets[:0]
	for i := range pp.statuses {
		pp.statuses[i] = pp.statuses[i][:0]
	}
}

// podFromWire makes the record of a Pod message.
func (t *Transformer) podFromWire(b []byte, s *wireScratch) (*model.Pod, error) {
	s.resetObject()
	s.resetPod()
	var seen uint64
	var phase, sa []byte
	rec := &model.Pod{}
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		switch num {
		case podMetadata, podSpec, podStatusF:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			if err := once(&seen, uint(num)); err != nil {
				return nil, err
			}
			switch num {
			case podMetadata:
				err = readMeta(v, &s.meta, true)
			case podSpec:
				sa, err = readPodSpec(v, &s.pod)
			case podStatusF:
				phase, err = readPodStatus(v, &s.pod, rec)
			}
			if err != nil {
				return nil, err
			}
		default:
			if err := p.skip(start); err != nil {
				return nil, err
			}
		}
	}
	m := &s.meta
	rec.ObjectMeta = m.meta
	if m.initialEventsEnd && rec.Name == "" {
		keepInitialEventsEnd(&rec.ObjectMeta)
	}
	rec.Phase = intern(phase)
	rec.Terminating = m.deleting
	rec.ServiceAccount = intern(sa)
	rec.Workload = m.workload()
	rec.Workload.Kind = model.Intern(rec.Workload.Kind)
	if len(m.reload) > 0 {
		rec.ReloadAnnotations = append([]string(nil), m.reload...)
	}
	// Secret names repeat across the replicas of a workload: interned, they
	// are stored once (model.Intern keeps a copy, never the view).
	s.pod.assemble(rec, model.Intern)
	return rec, nil
}

func readPodSpec(b []byte, pp *podParts) (sa []byte, err error) {
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		switch num {
		case specVolumes:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			if err := readVolume(v, pp); err != nil {
				return nil, err
			}
		case specContainers, specInitContainers, specEphemeralContainers:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			kind := model.ContainerRegular
			switch num {
			case specInitContainers:
				kind = model.ContainerInit
			case specEphemeralContainers:
				kind = model.ContainerEphemeral
				if v, err = ephemeralCommonOf(v); err != nil {
					return nil, err
				}
			}
			c := pp.nextContainer(kind)
			if err := readContainer(v, c); err != nil {
				return nil, err
			}
		case specServiceAccountName:
			if sa, err = p.field(wt); err != nil {
				return nil, err
			}
		case specImagePullSecrets:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			name, err := localName(v)
			if err != nil {
				return nil, err
			}
			pp.imagePullSecrets = append(pp.imagePullSecrets, name)
		default:
			if err := p.skip(start); err != nil {
				return nil, err
			}
		}
	}
	// Containers by kind, as the typed transform walks them: init, regular,
	// ephemeral (the wire may interleave the three lists).
	pp.sortContainers()
	return sa, nil
}

// nextContainer appends a container, reusing the slices of a previous decode.
func (pp *podParts) nextContainer(kind model.ContainerKind) *podContainer {
	if len(pp.containers) < cap(pp.containers) {
		pp.containers = pp.containers[:len(pp.containers)+1]
	} else {
		pp.containers = append(pp.containers, podContainer{})
	}
	c := &pp.containers[len(pp.containers)-1]
	*c = podContainer{kind: kind, env: c.env[:0], envFrom: c.envFrom[:0], mounts: c.mounts[:0]}
	return c
}

func kindOrder(k model.ContainerKind) int {
	switch k {
	case model.ContainerInit:
		return 0
	case model.ContainerRegular:
		return 1
	}
	return 2
}

// sortContainers orders the containers by kind, stably (insertion sort: a pod
// has a handful, already in order unless the wire interleaves the lists).
func (pp *podParts) sortContainers() {
	cs := pp.containers
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && kindOrder(cs[j].kind) < kindOrder(cs[j-1].kind); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// ephemeralCommonOf returns an EphemeralContainer's ephemeralContainerCommon
// (which has the field numbers of Container).
func ephemeralCommonOf(b []byte) ([]byte, error) {
	var out []byte
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		if num == ephemeralCommon {
			if out, err = p.field(wt); err != nil {
				return nil, err
			}
			if err := once(&seen, 0); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.skip(start); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readContainer(b []byte, c *podContainer) error {
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case ctrName:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			c.name = view(v)
		case ctrEnv:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			r, ok, err := readEnvVar(v)
			if err != nil {
				return err
			}
			if ok {
				c.env = append(c.env, r)
			}
		case ctrEnvFrom:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			r, ok, err := readEnvFrom(v)
			if err != nil {
				return err
			}
			if ok {
				c.envFrom = append(c.envFrom, r)
			}
		case ctrVolumeMounts:
			v, err := p.field(wt)
			if err != nil {
				return err
			}
			m, err := readMount(v)
			if err != nil {
				return err
			}
			c.mounts = append(c.mounts, m)
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	return nil
}

// sub returns the content of the singular message field num of b, whether it
// is present, and an error when it repeats (or b is malformed).
func sub(b []byte, num int32) (out []byte, ok bool, err error) {
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		n, wt, err := p.tag()
		if err != nil {
			return nil, false, err
		}
		if n == num {
			if ok {
				return nil, false, errPBRepeated
			}
			if out, err = p.field(wt); err != nil {
				return nil, false, err
			}
			ok = true
			continue
		}
		if err := p.skip(start); err != nil {
			return nil, false, err
		}
	}
	return out, ok, nil
}

// readEnvVar: env[].valueFrom.secretKeyRef, when set.
func readEnvVar(b []byte) (podRef, bool, error) {
	src, ok, err := sub(b, envValueFrom)
	if err != nil || !ok {
		return podRef{}, false, err
	}
	sel, ok, err := sub(src, sourceSecretKeyRef)
	if err != nil || !ok {
		return podRef{}, false, err
	}
	var r podRef
	var seen uint64
	p := pbuf{b: sel}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return podRef{}, false, err
		}
		switch num {
		case keySelRef:
			v, err := p.field(wt)
			if err != nil {
				return podRef{}, false, err
			}
			if err := once(&seen, 0); err != nil {
				return podRef{}, false, err
			}
			if r.secret, err = localName(v); err != nil {
				return podRef{}, false, err
			}
		case keySelKey:
			v, err := p.field(wt)
			if err != nil {
				return podRef{}, false, err
			}
			r.key = view(v)
		case keySelOptional:
			if r.optional, err = p.boolean(wt); err != nil {
				return podRef{}, false, err
			}
		default:
			if err := p.skip(start); err != nil {
				return podRef{}, false, err
			}
		}
	}
	return r, true, nil
}

// readEnvFrom: envFrom[].secretRef, when set.
func readEnvFrom(b []byte) (podRef, bool, error) {
	ref, ok, err := sub(b, envFromSecretRef)
	if err != nil || !ok {
		return podRef{}, false, err
	}
	var r podRef
	var seen uint64
	p := pbuf{b: ref}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return podRef{}, false, err
		}
		switch num {
		case envSourceRef:
			v, err := p.field(wt)
			if err != nil {
				return podRef{}, false, err
			}
			if err := once(&seen, 0); err != nil {
				return podRef{}, false, err
			}
			if r.secret, err = localName(v); err != nil {
				return podRef{}, false, err
			}
		case envSourceOptional:
			if r.optional, err = p.boolean(wt); err != nil {
				return podRef{}, false, err
			}
		default:
			if err := p.skip(start); err != nil {
				return podRef{}, false, err
			}
		}
	}
	return r, true, nil
}

// localName reads a LocalObjectReference's name (a view).
func localName(b []byte) (string, error) {
	var name string
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return "", err
		}
		if num == localObjectRefName {
			v, err := p.field(wt)
			if err != nil {
				return "", err
			}
			name = view(v)
			continue
		}
		if err := p.skip(start); err != nil {
			return "", err
		}
	}
	return name, nil
}

func readMount(b []byte) (podMount, error) {
	var m podMount
	var subPath, subExpr bool
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return m, err
		}
		switch num {
		case mountName, mountSubPath, mountSubPathExpr:
			v, err := p.field(wt)
			if err != nil {
				return m, err
			}
			switch num {
			case mountName:
				m.volume = view(v)
			case mountSubPath:
				subPath = len(v) > 0
			case mountSubPathExpr:
				subExpr = len(v) > 0
			}
		default:
			if err := p.skip(start); err != nil {
				return m, err
			}
		}
	}
	m.sub = subPath || subExpr
	return m, nil
}

func readVolume(b []byte, pp *podParts) error {
	v := podVolume{}
	var src []byte
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case volName:
			f, err := p.field(wt)
			if err != nil {
				return err
			}
			v.name = view(f)
		case volSource:
			if src, err = p.field(wt); err != nil {
				return err
			}
			if err := once(&seen, 0); err != nil {
				return err
			}
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	// The volume source's secret, then its projected secret sources.
	var sec, proj []byte
	var hasSec, hasProj bool
	seen = 0
	p = pbuf{b: src}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return err
		}
		switch num {
		case vsSecret, vsProjected:
			f, err := p.field(wt)
			if err != nil {
				return err
			}
			if err := once(&seen, uint(num)); err != nil {
				return err
			}
			if num == vsSecret {
				sec, hasSec = f, true
			} else {
				proj, hasProj = f, true
			}
		default:
			if err := p.skip(start); err != nil {
				return err
			}
		}
	}
	if hasSec {
		vs, err := readSecretSource(sec, secretVolName, secretVolItems, secretVolOptional, false)
		if err != nil {
			return err
		}
		v.secrets = append(v.secrets, vs)
	}
	if hasProj {
		p = pbuf{b: proj}
		for p.more() {
			start := p.i
			num, wt, err := p.tag()
			if err != nil {
				return err
			}
			if num != projSources {
				if err := p.skip(start); err != nil {
					return err
				}
				continue
			}
			f, err := p.field(wt)
			if err != nil {
				return err
			}
			s, ok, err := sub(f, projectionSecret)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			vs, err := readSecretSource(s, secretProjRef, secretProjItems, secretProjOptional, true)
			if err != nil {
				return err
			}
			v.secrets = append(v.secrets, vs)
		}
	}
	pp.volumes = append(pp.volumes, v)
	return nil
}

// readSecretSource reads a SecretVolumeSource (name: secretName, a string) or a
// SecretProjection (name: a LocalObjectReference).
func readSecretSource(b []byte, nameNum, itemsNum, optNum int32, projected bool) (volSecret, error) {
	vs := volSecret{projected: projected}
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return vs, err
		}
		switch num {
		case nameNum:
			f, err := p.field(wt)
			if err != nil {
				return vs, err
			}
			if projected {
				if err := once(&seen, 0); err != nil {
					return vs, err
				}
				if vs.name, err = localName(f); err != nil {
					return vs, err
				}
			} else {
				vs.name = view(f)
			}
		case itemsNum:
			f, err := p.field(wt)
			if err != nil {
				return vs, err
			}
			k, err := keyToPathKey(f)
			if err != nil {
				return vs, err
			}
			vs.items = append(vs.items, intern(k))
		case optNum:
			if vs.optional, err = p.boolean(wt); err != nil {
				return vs, err
			}
		default:
			if err := p.skip(start); err != nil {
				return vs, err
			}
		}
	}
	return vs, nil
}

func keyToPathKey(b []byte) ([]byte, error) {
	var k []byte
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		if num == ktpKey {
			if k, err = p.field(wt); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.skip(start); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func readPodStatus(b []byte, pp *podParts, rec *model.Pod) (phase []byte, err error) {
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		switch num {
		case statusPhase:
			if phase, err = p.field(wt); err != nil {
				return nil, err
			}
		case statusStartTime:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			if rec.StartTime, err = pbTime(v); err != nil {
				return nil, err
			}
		case statusInit, statusContainers, statusEphemeral:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			st, err := readContainerStatus(v)
			if err != nil {
				return nil, err
			}
			k := 1
			switch num {
			case statusInit:
				k = 0
			case statusEphemeral:
				k = 2
			}
			pp.statuses[k] = append(pp.statuses[k], st)
		default:
			if err := p.skip(start); err != nil {
				return nil, err
			}
		}
	}
	return phase, nil
}

func readContainerStatus(b []byte) (podStatus, error) {
	var st podStatus
	var seen uint64
	var state []byte
	var hasState bool
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return st, err
		}
		switch num {
		case csName:
			v, err := p.field(wt)
			if err != nil {
				return st, err
			}
			st.name = view(v)
		case csState:
			if state, err = p.field(wt); err != nil {
				return st, err
			}
			if err := once(&seen, 0); err != nil {
				return st, err
			}
			hasState = true
		default:
			if err := p.skip(start); err != nil {
				return st, err
			}
		}
	}
	if !hasState {
		return st, nil
	}
	run, ok, err := sub(state, stateRunning)
	if err != nil || !ok {
		return st, err
	}
	st.running = true
	p = pbuf{b: run}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return st, err
		}
		if num == runningStartedAt {
			v, err := p.field(wt)
			if err != nil {
				return st, err
			}
			if st.startedAt, err = pbTime(v); err != nil {
				return st, err
			}
			continue
		}
		if err := p.skip(start); err != nil {
			return st, err
		}
	}
	return st, nil
}
