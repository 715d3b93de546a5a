package repo

import (
	"slices"
	"testing"
)

func TestStorable(t *testing.T) {
	for _, c := range []struct {
		listed, ok, refused []string
	}{
		{nil, nil, nil},
		{[]string{"a.bin", "d/b.bin"}, []string{"a.bin", "d/b.bin"}, nil},
		{[]string{"a\tb.bin", "c.bin", "d\ne.bin", "f.bin", "g\\h.bin", "i\xffj.bin"},
			[]string{"c.bin", "f.bin"}, []string{"a\tb.bin", "d\ne.bin", "g\\h.bin", "i\xffj.bin"}},
		{[]string{"a.bin", "b\rc.bin"}, []string{"a.bin"}, []string{"b\rc.bin"}},
	} {
		listed := slices.Clone(c.listed)
		ok, refused := storable(listed)
		var names []string
		for _, f := range refused {
			names = append(names, f.Path)
			if f.Reason == "" {
				t.Errorf("%q refused without a reason", f.Path)
			}
		}
		if !slices.Equal(ok, c.ok) || !slices.Equal(names, c.refused) || !slices.Equal(listed, c.listed) {
			t.Errorf("storable(%q) = %q, %q; want %q, %q (listed left as it was)", c.listed, ok, names, c.ok, c.refused)
		}
	}
}
