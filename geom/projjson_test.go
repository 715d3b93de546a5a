package geom

import "testing"

func TestProjJSONName(t *testing.T) {
	for raw, want := range map[string]string{
		`{"name":"WGS 84","id":{"authority":"EPSG","code":4326}}`:   "EPSG:4326",
		`{"name":"WGS 84","id":{"authority":"OGC","code":"CRS84"}}`: "OGC:CRS84",
		`{"name":"Local grid"}`:                  "Local grid",
		`{"name":"x","id":{"authority":"EPSG"}}`: "x",
		`{}`:                                     "",
	} {
		if got, ok := ProjJSONName([]byte(raw)); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"", `"EPSG:4326"`, `[1]`, `{`} {
		if got, ok := ProjJSONName([]byte(raw)); ok {
			t.Errorf("%q: named %q", raw, got)
		}
	}
}
