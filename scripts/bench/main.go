// Command bench is a helper of scripts/bench.sh (make bench):
//
//	bench rand -o FILE -size BYTES [-seed N]
//	    FILE of pseudo-random bytes (ChaCha8 seeded with N): the same bytes
//	    on every machine, incompressible, for hashing benchmarks that
//	    compare chunkvc's hashing with b3sum on identical input.
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
	if len(os.Args) < 2 || os.Args[1] != "rand" {
		fmt.Fprintln(os.Stderr, "usage: bench rand -o FILE -size BYTES [-seed N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("rand", flag.ExitOnError)
	out := fs.String("o", "", "output file (required)")
	size := fs.Int64("size", 256<<20, "bytes to write")
	seed := fs.Uint64("seed", 1, "seed")
	fs.Parse(os.Args[2:])
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
		src.Read(buf[:n])
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
