package transform

// The wire decoder of Secrets: the record of a v1 Secret read from its
// protobuf encoding, without the typed object (field numbers from
// k8s.io/api/core/v1/generated.proto). Values are fingerprinted from the
// response bytes; no value is ever copied into a string or a buffer of ours.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// Field numbers of Secret.
const (
	secMetadata   = 1
	secData       = 2
	secType       = 3
	secStringData = 4
)

// wireScratch is the reusable state of one decode (pooled).
type wireScratch struct {
	meta       wireMeta
	data, sdat []model.KeyEntry
	// wipe are the value bytes fingerprinted in the buffer: cleared once the
	// whole response decoded (before, a fallback may still read them).
	wipe [][]byte
	pod  podParts
}

// release drops every view of the response before the scratch goes back to
// the pool: a pooled scratch must not keep a response buffer alive.
func (s *wireScratch) release() {
	s.resetObject()
	clear(s.wipe[:cap(s.wipe)])
	s.wipe = s.wipe[:0]
	pp := &s.pod
	clear(pp.volumes[:cap(pp.volumes)])
	for i := range pp.containers[:cap(pp.containers)] {
		c := &pp.containers[:cap(pp.containers)][i]
		clear(c.env[:cap(c.env)])
		clear(c.envFrom[:cap(c.envFrom)])
		clear(c.mounts[:cap(c.mounts)])
		c.name = ""
	}
	for i := range pp.statuses {
		clear(pp.statuses[i][:cap(pp.statuses[i])])
	}
	clear(pp.imagePullSecrets[:cap(pp.imagePullSecrets)])
	s.resetPod()
}

func (s *wireScratch) resetObject() {
	s.meta.reset()
	s.data, s.sdat = s.data[:0], s.sdat[:0]
}

// secretFromWire makes the record of a Secret message. The value bytes it
// fingerprinted are appended to s.wipe.
func (t *Transformer) secretFromWire(b []byte, s *wireScratch) (*model.Secret, error) {
	s.resetObject()
	var typ []byte
	var seen uint64
	p := pbuf{b: b}
	for p.more() {
		start := p.i
		num, wt, err := p.tag()
		if err != nil {
			return nil, err
		}
		switch num {
		case secMetadata:
			v, err := p.field(wt)
			if err != nil {
				return nil, err
			}
			if err := once(&seen, 0); err != nil {
				return nil, err
			}
			if err := readMeta(v, &s.meta, false); err != nil {
				return nil, err
			}
		case secData, secStringData:
			k, v, _, err := p.entry(wt)
			if err != nil {
				return nil, err
			}
			e := model.KeyEntry{Name: intern(k), KeyInfo: t.FP.Key(v)}
			if num == secData {
				s.data = append(s.data, e)
			} else {
				s.sdat = append(s.sdat, e)
			}
			if len(v) > 0 {
				s.wipe = append(s.wipe, v)
			}
		case secType:
			if typ, err = p.field(wt); err != nil {
				return nil, err
			}
		default:
			if err := p.skip(start); err != nil {
				return nil, err
			}
		}
	}
	m := &s.meta
	rec := &model.Secret{
		ObjectMeta: m.meta,
		Type:       intern(typ),
		Owners:     model.Clip(m.owners),
		Managers:   parse.ManagedFieldsOf(m.mfs, "f:data", "f:stringData"),
	}
	if m.initialEventsEnd && rec.Name == "" {
		keepInitialEventsEnd(&rec.ObjectMeta)
	}
	// After the data keys: of two entries with the same name, the later wins
	// (a decoded map keeps the last occurrence of a key, and stringData is
	// appended after data by the typed transform).
	keys := make([]model.KeyEntry, 0, len(s.data)+len(s.sdat))
	keys = append(append(keys, s.data...), s.sdat...)
	rec.Keys = model.NewKeySetOf(keys)
	if m.hasLastApplied {
		if len(m.lastApplied) > 0 {
			s.wipe = append(s.wipe, m.lastApplied)
		}
		rec.LastApplied = parse.LastAppliedBytes(m.lastApplied, t.FP)
		if rec.LastApplied.Name == rec.Name {
			rec.LastApplied.Name = rec.Name // one string, not two
		}
		holds := parse.LastAppliedHoldsOf(m.mfs, [][]string{parse.PathSecretData, parse.PathSecretStringData})
		rec.LastApplied.HoldsList = holds[0]
		t.decodeProblemOf("secrets", &rec.ObjectMeta, "last-applied", rec.LastApplied.Err)
	}
	if m.hasExpected {
		keys, err := parse.ExpectedKeys(string(m.expectedKeys))
		rec.ExpectedKeys = keys
		if err != nil {
			rec.ExpectedKeysErr = err.Error()
			t.decodeProblemOf("secrets", &rec.ObjectMeta, model.AnnExpectedKeys, rec.ExpectedKeysErr)
		}
	}
	m.owners = nil // kept by the record
	return rec, nil
}

// keepInitialEventsEnd keeps the annotation of a watch-list's closing bookmark
// (an object with no name): the reflector reads it from the decoded object.
func keepInitialEventsEnd(m annotated) {
	ann := m.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[metav1.InitialEventsAnnotationKey] = "true"
	m.SetAnnotations(ann)
}

// annotated is a record's metadata (model.ObjectMeta, promoted to every
// record) as keepInitialEventsEnd needs it.
type annotated interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}
