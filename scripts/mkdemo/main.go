// Command mkdemo writes deterministic demo and benchmark inputs that GDAL
// turns into real files:
//
//	mkdemo raster -o dem.bin -size 2048 [-bands 1] [-edit X,Y,W,H]
//	    UInt16 terrain as ENVI raw (dem.bin + dem.hdr); gdal_translate makes a COG.
//	mkdemo points -o pts.csv -n 200000 [-edit-box X0,Y0,X1,Y1]
//	    CSV of points (lon,lat,id,name,value); ogr2ogr makes a FlatGeobuf.
//
// An edit changes only the given window or box, so chunkvc's locality can be
// seen: the same seed gives the same bytes everywhere else.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mkdemo raster|points [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "raster":
		err = raster(os.Args[2:])
	case "points":
		err = points(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdemo:", err)
		os.Exit(1)
	}
}

func ints(s string, n int) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("want %d comma-separated numbers, got %q", n, s)
	}
	out := make([]int, n)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func raster(args []string) error {
	fs := flag.NewFlagSet("raster", flag.ExitOnError)
	out := fs.String("o", "dem.bin", "output raw file (an ENVI .hdr is written beside it)")
	size := fs.Int("size", 2048, "width and height in pixels")
	bands := fs.Int("bands", 1, "bands")
	edit := fs.String("edit", "", "X,Y,W,H window whose values are raised")
	if err := fs.Parse(args); err != nil {
		return err
	}
	win, err := ints(*edit, 4)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n := *size
	row := make([]byte, 2*n)
	// Separable terms, tabulated once: terrain-like but cheap to make.
	sx, sy, tx, ty := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for b := 0; b < *bands; b++ {
		for i := 0; i < n; i++ {
			f := float64(i) / float64(n)
			sx[i], sy[i] = 400*math.Sin(6*f+float64(b)), math.Cos(5*f)
			tx[i], ty[i] = 150*math.Sin(37*f), math.Sin(23*f)
		}
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				v := 1000 + sx[x]*sy[y] + tx[x]*ty[y] + float64((x*7+y*13+b)%17)
				if win != nil && x >= win[0] && x < win[0]+win[2] && y >= win[1] && y < win[1]+win[3] {
					v += 250
				}
				binary.LittleEndian.PutUint16(row[2*x:], uint16(v))
			}
			if _, err := w.Write(row); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	hdr := strings.TrimSuffix(*out, ".bin") + ".hdr"
	return os.WriteFile(hdr, []byte(fmt.Sprintf("ENVI\nsamples = %d\nlines = %d\nbands = %d\nheader offset = 0\nfile type = ENVI Standard\ndata type = 12\ninterleave = bsq\nbyte order = 0\n", n, n, *bands)), 0o644)
}

func points(args []string) error {
	fs := flag.NewFlagSet("points", flag.ExitOnError)
	out := fs.String("o", "points.csv", "output CSV")
	n := fs.Int("n", 200000, "number of points")
	box := fs.String("edit-box", "", "X0,Y0,X1,Y1 (×1000 degrees): lengthen names of points inside")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := ints(*box, 4)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "lon,lat,id,name,value")
	r := rand.New(rand.NewSource(1))
	for i := 0; i < *n; i++ {
		lon, lat := 5+10*r.Float64(), 45+10*r.Float64()
		name := fmt.Sprintf("p%d", i)
		if b != nil && lon*1000 >= float64(b[0]) && lat*1000 >= float64(b[1]) && lon*1000 < float64(b[2]) && lat*1000 < float64(b[3]) {
			name += "-surveyed-2026"
		}
		fmt.Fprintf(w, "%.6f,%.6f,%d,%s,%.3f\n", lon, lat, i, name, r.Float64()*100)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
