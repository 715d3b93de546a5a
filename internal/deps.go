//go:build tools

// Package internal pins modules that packages of this repository import,
// so that go.mod stays stable while work on them is in progress.
package internal

import (
	_ "github.com/PlakarKorp/go-cdc-chunkers"
	_ "github.com/airbusgeo/cogger"
	_ "github.com/airbusgeo/godal"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
)
