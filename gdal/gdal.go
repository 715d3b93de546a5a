//go:build gdal

package gdal

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
)

var registerOnce sync.Once

func register() { registerOnce.Do(godal.RegisterAll) }

// warnings collects GDAL warnings so they do not fail a call; failures
// still do. The first few are kept for error messages.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) handler(ec godal.ErrorCategory, code int, msg string) error {
	if ec >= godal.CE_Failure {
		return errors.New(strings.TrimSpace(msg))
	}
	if ec == godal.CE_Warning {
		w.mu.Lock()
		if len(w.msgs) < 8 {
			w.msgs = append(w.msgs, strings.TrimSpace(msg))
		}
		w.mu.Unlock()
	}
	return nil
}

// open opens a raster read-only, tolerating warnings (an in-place edited
// COG warns that its layout optimizations were invalidated).
func open(path string) (*godal.Dataset, error) {
	register()
	var w warnings
	ds, err := godal.Open(path, godal.RasterOnly(), godal.ErrLogger(w.handler))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return ds, nil
}

// Grid is the full-resolution tile grid of a raster.
type Grid struct {
	Width, Height         int
	Bands                 int
	TileWidth, TileHeight int
	DataType              string
}

// Across and Down are the numbers of tile columns and rows.
func (g Grid) Across() int { return (g.Width + g.TileWidth - 1) / g.TileWidth }
func (g Grid) Down() int   { return (g.Height + g.TileHeight - 1) / g.TileHeight }

// Tiles is the number of full-resolution tiles (per plane).
func (g Grid) Tiles() int { return g.Across() * g.Down() }

func (g Grid) String() string {
	return fmt.Sprintf("%dx%dx%d %s, tiles %dx%d", g.Width, g.Height, g.Bands, g.DataType, g.TileWidth, g.TileHeight)
}

func gridOf(ds *godal.Dataset) Grid {
	st := ds.Structure()
	return Grid{
		Width: st.SizeX, Height: st.SizeY, Bands: st.NBands,
		TileWidth: st.BlockSizeX, TileHeight: st.BlockSizeY,
		DataType: st.DataType.String(),
	}
}

// Inspect returns the tile grid of the raster at path.
func Inspect(path string) (Grid, error) {
	ds, err := open(path)
	if err != nil {
		return Grid{}, err
	}
	defer func() { _ = ds.Close() }() // opened read-only: nothing to flush
	return gridOf(ds), nil
}
