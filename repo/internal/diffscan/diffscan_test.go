package diffscan

import "testing"

func TestInScope(t *testing.T) {
	if !inScope("lake/a.parquet", []string{"lake"}) || inScope("lakeside/a", []string{"lake"}) || !inScope("x", nil) {
		t.Fatal("inScope")
	}
}
