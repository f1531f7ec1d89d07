package leak

import "testing"

// The scanner finds the random parts of a templated value and ignores windows
// that are mostly its fixed frame: the false alarm it had was `r":"pk` of
// {"user":"pk...} in a JSON log line `"reflector":"pkg/...`.
func TestScannerFramedValues(t *testing.T) {
	v := templated("json", `{"user":"`, "pkqwzrtx", `","pass":"`, "Zm9vYmFyYmF6cXV4", `"}`)
	s := NewScanner([]Value{v}, "")
	if s.Framed == 0 {
		t.Fatal("no window counted as frame")
	}
	for _, c := range []struct {
		text string
		hit  bool
	}{
		{`time=1 "reflector":"pkg/client-go"`, false}, // r":"pk: two random bytes
		{`leaked qwzrtx here`, true},                  // six random bytes
		{`"user":"pkqw`, true},                        // frame plus four random bytes
		{`b64 Zm9vYm`, true},
		{`"pass":"Zm`, false},
	} {
		hits, _ := s.Scan("t", []byte(c.text))
		if got := len(hits) > 0; got != c.hit {
			t.Errorf("%q: hit=%v, want %v (%v)", c.text, got, c.hit, hits)
		}
	}
	// The base64 form: a character is random when a byte it encodes is.
	// {"user":" is nine fixed bytes: the first six base64 characters encode
	// bytes 0-4 only; characters 12-17 encode bytes 9-13, all random.
	if n := v.randomIn("base64", 0); n != 0 {
		t.Errorf("base64 window 0: %d random characters, want 0", n)
	}
	if n := v.randomIn("base64", 12); n != Window {
		t.Errorf("base64 window 12: %d random characters, want %d", n, Window)
	}
	plain := Value{Kind: "hex", Bytes: []byte("0123456789abcdef")}
	if plain.randomIn("raw", 3) != Window {
		t.Error("a value with no frame is all random")
	}
}
