package transform

import (
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

// The wire decoders on arbitrary bytes: they never panic, and whenever both
// the generated (typed) Unmarshal and the wire decoder accept a message, the
// records are identical. The wire decoder may reject a message the typed one
// accepts (a singular message field repeated: the typed decoder merges the
// two; the agent then takes the typed path) and may accept one the typed
// decoder rejects (it does not read, so does not validate, the fields it
// skips; the apiserver never sends either). Memory is bounded by the input:
// every slice the decoder reads is a view of it, no length read from the input
// sizes an allocation.

func seedMessages(f *testing.F, mk func(r *rand.Rand, i int) []byte) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 40; i++ {
		f.Add(mk(r, i))
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x00, 0x0a, 0x00})
	f.Add([]byte{0x12, 0x05, 0x0a, 0x01, 'k', 0x12, 0x09})
}

func FuzzWireSecret(f *testing.F) {
	seedMessages(f, func(r *rand.Rand, i int) []byte {
		b, _ := randSecret(r, i).Marshal()
		return b
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := newTransformer()
		sc := new(wireScratch)
		rec, werr := tr.secretFromWire(append([]byte(nil), data...), sc)
		var s corev1.Secret
		if terr := s.Unmarshal(data); terr != nil || werr != nil {
			return
		}
		want, _ := tr.Secret(&s)
		if !reflect.DeepEqual(normalise(want.(*model.Secret)), normalise(rec)) {
			t.Fatalf("records differ\ntyped: %s\nwire:  %s", dump(want.(*model.Secret)), dump(rec))
		}
	})
}

func FuzzWirePod(f *testing.F) {
	seedMessages(f, func(r *rand.Rand, i int) []byte {
		b, _ := randPod(r, i).Marshal()
		return b
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := newTransformer()
		sc := new(wireScratch)
		rec, werr := tr.podFromWire(append([]byte(nil), data...), sc)
		var p corev1.Pod
		if terr := p.Unmarshal(data); terr != nil || werr != nil {
			return
		}
		want, _ := tr.Pod(&p)
		if !reflect.DeepEqual(normalise(want.(*model.Pod)), normalise(rec)) {
			t.Fatalf("records differ\ntyped: %s\nwire:  %s", dump(want.(*model.Pod)), dump(rec))
		}
	})
}
