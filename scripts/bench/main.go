// Command bench is a helper of scripts/bench.sh (make bench):
//
//	bench rand -o FILE -size BYTES [-seed N]
//	    FILE of pseudo-random bytes (ChaCha8 seeded with N): the same bytes
//	    on every machine, incompressible, for hashing benchmarks that
//	    compare chunkvc's hashing with b3sum on identical input.
//	bench tree -dir DIR -files N [-seed N] [-edit K]
//	    N small files (1 to 4 KiB of text, 500 per folder) under DIR for
//	    the large-tree benchmark; with -edit K, rewrite K of them instead.
//	bench zarr -dir DIR -chunks N [-seed S] [-edit K] [-append T] [-rechunk]
//	    a Zarr v2 store DIR (a group holding the array t2m, "<f4", 1×16×16
//	    chunks, zlib) of N chunk files, rounded up to time steps of 1,000;
//	    on an existing store, -edit K rewrites K chunk files, -append T adds
//	    T time steps, -rechunk rewrites the array with 2×16×16 chunks.
//	bench run COMMAND [ARG...]
//	    runs COMMAND and prints its wall and CPU time in microseconds
//	    (scripts/recommit-ab.sh).
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "tree" {
		treeMain(os.Args[2:])
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "zarr" {
		zarrMain(os.Args[2:])
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "run" {
		runMain(os.Args[2:])
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "rand" {
		fmt.Fprintln(os.Stderr, "usage: bench rand -o FILE -size BYTES [-seed N] | bench tree -dir DIR -files N [-seed N] [-edit K] | bench zarr -dir DIR -chunks N [...] | bench run COMMAND [ARG...]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("rand", flag.ExitOnError)
	out := fs.String("o", "", "output file (required)")
	size := fs.Int64("size", 256<<20, "bytes to write")
	seed := fs.Uint64("seed", 1, "seed")
	_ = fs.Parse(os.Args[2:]) // ExitOnError: exits on a bad flag
	if *out == "" || *size < 0 {
		fmt.Fprintln(os.Stderr, "bench rand: -o is required and -size must be ≥ 0")
		os.Exit(2)
	}
	if err := randFile(*out, *size, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "bench rand:", err)
		os.Exit(1)
	}
}

func randFile(path string, size int64, seed uint64) error {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	src := rand.NewChaCha8(key)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = src.Read(buf[:n]) // ChaCha8 fills all of buf, never failing
		if _, err := w.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func treeMain(args []string) {
	fs := flag.NewFlagSet("tree", flag.ExitOnError)
	dir := fs.String("dir", "", "folder to fill (required)")
	files := fs.Int("files", 20000, "files to write")
	seed := fs.Uint64("seed", 1, "seed")
	edit := fs.Int("edit", 0, "rewrite this many of the files instead")
	_ = fs.Parse(args) // ExitOnError: exits on a bad flag
	if *dir == "" || *files <= 0 || *edit < 0 {
		fmt.Fprintln(os.Stderr, "bench tree: -dir is required, -files must be > 0")
		os.Exit(2)
	}
	if err := tree(*dir, *files, *seed, *edit); err != nil {
		fmt.Fprintln(os.Stderr, "bench tree:", err)
		os.Exit(1)
	}
}

// tree writes files small text files (or rewrites edit of them, spread
// over the tree) that differ from each other.
func tree(dir string, files int, seed uint64, edit int) error {
	rng := rand.New(rand.NewPCG(seed, uint64(edit)))
	which := func(i int) int { return i }
	n := files
	if edit > 0 {
		n = min(edit, files)
		which = func(i int) int { return i * files / n }
	}
	var line []byte
	for i := range n {
		k := which(i)
		d := fmt.Sprintf("%s/d%03d", dir, k/500)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		line = line[:0]
		for len(line) < 1024+rng.IntN(3072) {
			line = fmt.Appendf(line, "%d,%d,%.4f,%.4f\n", k, rng.IntN(1000000), rng.Float64()*360-180, rng.Float64()*180-90)
		}
		if err := os.WriteFile(fmt.Sprintf("%s/f%05d.csv", d, k), line, 0o644); err != nil {
			return err
		}
	}
	return nil
}
