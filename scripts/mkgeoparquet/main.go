// Command mkgeoparquet writes a deterministic GeoParquet 1.1 file of random
// points (id, name, value, WKB geometry, bbox covering; zstd; geo metadata)
// for demos and benchmarks of the Parquet adapter.
//
//	go run ./scripts/mkgeoparquet -o points.parquet -rows 200000 -rowgroups 20
//	go run ./scripts/mkgeoparquet -o edited.parquet -rows 200000 -rowgroups 20 -edit-rows 100 -edit-rg 7
//	go run ./scripts/mkgeoparquet -o appended.parquet -rows 200000 -rowgroups 20 -append-rg
//
// The same flags always give the same bytes; an edited or appended file
// shares every untouched row group with the base file.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

func main() {
	var c pqgen.Config
	out := flag.String("o", "", "output file (required)")
	flag.IntVar(&c.Rows, "rows", 200000, "rows in the base file")
	flag.IntVar(&c.RowGroups, "rowgroups", 20, "row groups in the base file")
	flag.Int64Var(&c.Seed, "seed", 1, "random seed")
	flag.IntVar(&c.EditRows, "edit-rows", 0, "change the value column of this many rows")
	flag.IntVar(&c.EditRG, "edit-rg", 0, "row group whose first -edit-rows rows are changed")
	flag.BoolVar(&c.AppendRG, "append-rg", false, "append one more row group")
	flag.Parse()
	if err := run(*out, c); err != nil {
		fmt.Fprintln(os.Stderr, "mkgeoparquet:", err)
		os.Exit(1)
	}
}

func run(out string, c pqgen.Config) error {
	switch {
	case out == "":
		return fmt.Errorf("-o is required")
	case c.Rows < 0 || c.RowGroups < 1 || c.EditRows < 0 || c.EditRG < 0:
		return fmt.Errorf("-rows, -edit-rows and -edit-rg must be ≥ 0 and -rowgroups ≥ 1")
	case c.EditRows > 0 && c.EditRG >= c.RowGroups+btoi(c.AppendRG):
		return fmt.Errorf("-edit-rg %d is past the last row group", c.EditRG)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := pqgen.Write(w, c); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
