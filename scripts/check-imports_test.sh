#!/usr/bin/env bash
# The layering check, checked: each line below is one import that
# scripts/check-imports.sh must refuse, and the real tree must pass. A rule
# that stops refusing what it should fails `make lint`.
set -uo pipefail
cd "$(dirname "$0")/.."
m=github.com/chunkvc/chunkvc
bad=(
  "$m/manifest github.com/go-git/go-git/v5"
  "$m/store/local github.com/minio/minio-go/v7"
  "$m/store/s3 github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
  "$m/repo cloud.google.com/go/storage"
  "$m/internal/gcstest google.golang.org/api/option"
  "$m/store/s3 github.com/googleapis/gax-go/v2"
  "$m/formats/tiff github.com/airbusgeo/godal"
  "$m/formats/parquet github.com/parquet-go/parquet-go"
  "$m/repo github.com/parquet-go/parquet-go/format"
  "$m/formats/parquet/rows github.com/parquet-go/parquet-go"
  "$m/hashing $m/manifest"
  "$m/internal/progress $m/hashing"
  "$m/manifest $m/store"
  "$m/store/local $m/manifest"
  "$m/formats/parquet $m/store"
  "$m/repo $m/cmd/chunkvc"
  "$m/serve $m/formats/tiff"
  "$m/repo $m/serve"
  "$m/geom $m/hashing"
  "$m/manifest $m/formats"
  "$m/diff $m/repo"
  "$m/diff $m/store"
  "$m/internal/diffview $m/repo"
  "$m/repo github.com/go-git/go-git/v5/plumbing"
  "$m/repo/internal/gitdb $m/repo"
  "$m/repo/internal/statcache $m/repo"
  "$m/repo/internal/blockcache $m/repo"
  "$m/repo/internal/confine $m/repo"
  "$m/repo/internal/confine $m/hashing"
  "$m/repo/internal/statcache $m/store"
  "$m/repo/internal/blockcache $m/formats/tiff"
  "$m/repo/internal/statcache $m/repo/internal/blockcache"
  "$m/repo/internal/journal $m/repo"
  "$m/repo/internal/journal $m/manifest"
  "$m/repo/internal/readpath $m/repo"
  "$m/repo/internal/pattern $m/hashing"
  "$m/repo/internal/fileio $m/internal/writeback"
  "$m/repo/internal/derived $m/manifest"
  "$m/repo/internal/derived $m/repo"
  "$m/repo/internal/dataset $m/store"
  "$m/repo/internal/boxsel $m/store"
  "$m/repo/internal/lockfile $m/repo"
  "$m/repo/internal/lockfile $m/repo/internal/gitdb"
  "$m/repo/internal/readpath $m/store/s3"
  "$m/repo/internal/readpath $m/manifest"
  "$m/repo/internal/reach $m/store"
  "$m/repo/internal/reach $m/repo"
  "$m/repo/internal/gc $m/manifest"
  "$m/repo/internal/gc $m/repo/internal/statcache"
  "$m/repo/internal/gc $m/repo"
  "$m/repo/internal/fsck $m/repo/internal/readpath"
  "$m/repo/internal/fsck $m/repo"
  "$m/repo/internal/diffscan $m/store"
  "$m/repo/internal/diffscan $m/repo"
  "$m/repo/internal/walk $m/repo"
  "$m/repo/internal/walk $m/manifest"
  "$m/formats/zarr/codec $m/geom"
  "$m/formats/zarr/georef $m/formats/zarr/codec"
)
fail=0
for line in "${bad[@]}"; do
  if echo "$line" | scripts/check-imports.sh --stdin 2>/dev/null; then
    echo "check-imports.sh accepted a wrong import: $line" >&2
    fail=1
  fi
done
good=(
  "$m/repo $m/manifest $m/store $m/formats $m/hashing $m/repo/internal/gitdb"
  "$m/repo/internal/gitdb $m/internal/writeback $m/manifest github.com/go-git/go-git/v5 github.com/go-git/go-git/v5/plumbing"
  "$m/serve $m/repo $m/manifest $m/store $m/hashing $m/geom"
  "$m/cmd/chunkvc $m/serve $m/repo"
  "$m/manifest $m/geom $m/hashing"
  "$m/formats/tiff $m/geom $m/formats $m/hashing"
  "$m/diff $m/manifest $m/geom $m/formats $m/formats/tiff $m/hashing"
  "$m/internal/diffview $m/diff $m/geom $m/manifest $m/formats/tiff"
  "$m/repo/internal/statcache $m/hashing $m/repo/internal/confine $m/repo/internal/gitdb"
  "$m/repo/internal/blockcache $m/hashing $m/manifest $m/repo/internal/confine"
  "$m/repo $m/repo/internal/confine $m/repo/internal/statcache $m/repo/internal/blockcache"
  "$m/repo/internal/journal $m/hashing $m/repo/internal/statcache"
  "$m/repo/internal/readpath $m/hashing $m/store $m/store/local"
  "$m/repo/internal/derived $m/formats $m/formats/generic $m/hashing"
  "$m/repo/internal/boxsel $m/manifest $m/formats $m/formats/parquet $m/geom $m/hashing"
  "$m/repo/internal/lockfile $m/repo/internal/confine"
  "$m/repo/internal/walk $m/repo/internal/statcache"
  "$m/repo/internal/reach $m/hashing $m/manifest $m/repo/internal/gitdb"
  "$m/repo/internal/gc $m/hashing $m/store $m/repo/internal/gitdb $m/repo/internal/reach $m/repo/internal/registry"
  "$m/repo/internal/fsck $m/hashing $m/manifest $m/store $m/internal/progress $m/repo/internal/gitdb $m/repo/internal/reach"
  "$m/repo/internal/diffscan $m/diff $m/formats $m/formats/flatgeobuf $m/manifest $m/hashing $m/repo/internal/gitdb $m/repo/internal/reach $m/repo/internal/statcache"
)
good+=("$m/formats/parquet/pqgen github.com/parquet-go/parquet-go $m/geom")
for line in "${good[@]}"; do
  if ! echo "$line" | scripts/check-imports.sh --stdin; then
    echo "check-imports.sh refused allowed imports: $line" >&2
    fail=1
  fi
done
# The everyday binary's dependencies: what it must not link is refused.
for dep in github.com/parquet-go/parquet-go google.golang.org/protobuf/proto cloud.google.com/go/storage google.golang.org/grpc; do
  if printf 'fmt\n%s\nio\n' "$dep" | scripts/check-imports.sh --deps-stdin 2>/dev/null; then
    echo "check-imports.sh accepted cmd/chunkvc depending on $dep" >&2
    fail=1
  fi
done
if ! printf 'fmt\ngithub.com/klauspost/compress/zstd\n' | scripts/check-imports.sh --deps-stdin; then
  echo "check-imports.sh refused an allowed dependency list" >&2
  fail=1
fi
exit $fail
