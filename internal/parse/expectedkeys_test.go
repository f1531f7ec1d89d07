package parse

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestExpectedKeys(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		errKind error
		errIdx  int
	}{
		{in: "", want: nil},
		{in: " , ,\n", want: nil},
		{in: "A,B,C", want: []string{"A", "B", "C"}},
		{in: "C, B ,A", want: []string{"A", "B", "C"}},
		{in: "DB_PASSWORD\nDB_USER\r\n  tls.crt\ttls.key", want: []string{"DB_PASSWORD", "DB_USER", "tls.crt", "tls.key"}},
		{in: "A,,A, A", want: []string{"A"}},
		{in: "a-b_c.d,.env,..ok,9", want: []string{".env", "9", "a-b_c.d"}, errKind: ErrInvalid, errIdx: 2},
		{in: "good,bad/key,also good", want: []string{"also", "good"}, errKind: ErrInvalid, errIdx: 1},
		{in: "x;y,ok", want: []string{"ok"}, errKind: ErrInvalid, errIdx: 0},
		{in: ".,..,ok", want: []string{"ok"}, errKind: ErrInvalid, errIdx: 0},
		{in: "ok,caf\xc3\xa9,\xff,nul\x00", want: []string{"ok"}, errKind: ErrInvalid, errIdx: 1},
		{in: strings.Repeat("k", 253), want: []string{strings.Repeat("k", 253)}},
		{in: strings.Repeat("k", 254) + ",ok", want: []string{"ok"}, errKind: ErrInvalid, errIdx: 0},
		{in: strings.Repeat("k,", MaxExpectedKeysBytes), errKind: ErrTooLarge, errIdx: -1},
	}
	for i, tc := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			got, err := ExpectedKeys(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys = %q, want %q", got, tc.want)
			}
			checkErr(t, err)
			if tc.errKind == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tc.errKind) || e.Index != tc.errIdx {
				t.Fatalf("err = %v, want %v at entry %d", err, tc.errKind, tc.errIdx)
			}
			checkErrString(t, err.Error())
		})
	}
}

func TestExpectedKeysErrorHidesText(t *testing.T) {
	v := secretValue(t)
	_, err := ExpectedKeys("A," + v + "!,B")
	if err == nil || strings.Contains(err.Error(), v) {
		t.Fatalf("err = %v", err)
	}
	if want := "expected-keys: entry 1: invalid (character not allowed in a key) at offset 36"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
}

func TestExpectedKeysEntryLimit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxExpectedKeys+5; i++ {
		b.WriteString("K" + strconv.Itoa(i) + ",")
	}
	got, err := ExpectedKeys(b.String())
	if len(got) != MaxExpectedKeys || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d keys, err %v", len(got), err)
	}
	checkErr(t, err)
}
