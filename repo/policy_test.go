package repo

import (
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

func TestPolicyConfig(t *testing.T) {
	text := "version = 1\ntrack = lake/**\nappend-only = runs/**\nstrict-profile = *.tif\ngeo-identical = lake/**\ncrs = EPSG:4326 lake/**\n"
	c, err := ParseConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Policies) != 4 || c.Policies[3].Arg != "EPSG:4326" || c.Policies[3].Pattern != "lake/**" {
		t.Fatalf("policies %+v", c.Policies)
	}
	back, err := ParseConfig(c.Encode())
	if err != nil || len(back.Policies) != 4 || back.Policies[3] != c.Policies[3] {
		t.Fatalf("round trip %+v %v", back, err)
	}
	for _, bad := range []string{"crs = EPSG:4326\n", "append-only = [\n"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func geoManifest(p, geo string, digest byte) *manifest.Manifest {
	return &manifest.Manifest{Path: p, Format: "parquet", Digest: hashing.ID{digest},
		Summary: []manifest.Field{{Name: "geo", Value: geo}}}
}

// geo-identical refuses a partition whose geo metadata differs from its
// siblings' or from its own previous version, and only that one.
func TestPolicyGeoIdentical(t *testing.T) {
	pols := []Policy{{Rule: RuleGeoIdentical, Pattern: "lake/**"}}
	a, b := geoManifest("lake/a.parquet", "g1", 1), geoManifest("lake/b.parquet", "g1", 2)
	all := map[string]*manifest.Manifest{a.Path: a, b.Path: b}
	if vs := checkPolicies(pols, []Change{{Path: b.Path, New: b}}, all, PolicyOptions{}); len(vs) != 0 {
		t.Fatalf("identical geo refused: %+v", vs)
	}
	c := geoManifest("lake/c.parquet", "g2", 3)
	all[c.Path] = c
	vs := checkPolicies(pols, []Change{{Path: c.Path, New: c}}, all, PolicyOptions{})
	if len(vs) != 1 || vs[0].Path != c.Path || !strings.Contains(vs[0].Reason, "sibling") {
		t.Fatalf("a sibling with other geo metadata: %+v", vs)
	}
	a2 := geoManifest("lake/a.parquet", "g3", 4)
	vs = checkPolicies(pols, []Change{{Path: a.Path, Old: a, New: a2}}, map[string]*manifest.Manifest{a.Path: a2}, PolicyOptions{})
	if len(vs) != 1 || !strings.Contains(vs[0].Reason, "g1 → g3") {
		t.Fatalf("geo metadata changed across versions: %+v", vs)
	}
}
