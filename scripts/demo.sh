#!/usr/bin/env bash
# make demo: a data repository with a COG, a GeoParquet and a FlatGeobuf,
# committed, edited, committed again; log, ls-chunks, and a byte-identical
# checkout of the first version. Runs on the embedded local store.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cv="$top/bin/chunkvc"
demo="$top/demo"
rm -rf "$demo"
mkdir -p "$demo/gen" "$demo/v1"
gen="$demo/gen"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

go build -o "$gen/mkdemo" "$top/scripts/mkdemo"
go build -o "$gen/mkgeoparquet" "$top/scripts/mkgeoparquet"

cog() { # cog RAW OUT: the same COG profile every time, so untouched tiles keep their bytes
  gdal_translate -q -of COG -co COMPRESS=DEFLATE -co PREDICTOR=2 -co BLOCKSIZE=256 \
    -a_srs EPSG:32633 -a_ullr 500000 4620480 520480 4600000 "$1" "$2"
}
fgb() { # fgb CSV OUT
  ogr2ogr -f FlatGeobuf -lco SPATIAL_INDEX=YES -oo X_POSSIBLE_NAMES=lon -oo Y_POSSIBLE_NAMES=lat \
    -oo KEEP_GEOM_COLUMNS=NO -oo AUTODETECT_TYPE=YES -a_srs EPSG:4326 -nln stations "$2" "$1"
}

step "generate data: 2048×2048 UInt16 COG, 200k-row GeoParquet, 200k-point FlatGeobuf"
mkdir -p "$demo/repo"
cd "$demo/repo"
"$gen/mkdemo" raster -o "$gen/dem.bin" -size 2048
cog "$gen/dem.bin" dem.tif
"$gen/mkgeoparquet" -o sensors.parquet -rows 200000 -rowgroups 20 -seed 1
"$gen/mkdemo" points -o "$gen/stations.csv" -n 200000
fgb "$gen/stations.csv" stations.fgb
ls -l dem.tif sensors.parquet stations.fgb

step "chunkvc init && chunkvc track"
git init -q -b main .
git config user.name "chunkvc demo"
git config user.email "demo@chunkvc.invalid"
"$cv" init
"$cv" track '*.tif' '*.parquet' '*.fgb'
cp dem.tif sensors.parquet stations.fgb "$demo/v1/"

step "chunkvc commit (v1)"
"$cv" commit -m "v1: first survey"

step "edit: a 96×96 window of the raster, 100 rows of one row group, ~60 points' names"
"$gen/mkdemo" raster -o "$gen/dem.bin" -size 2048 -edit 800,800,96,96
cog "$gen/dem.bin" dem.tif
"$gen/mkgeoparquet" -o sensors.parquet -rows 200000 -rowgroups 20 -seed 1 -edit-rows 100 -edit-rg 7
"$gen/mkdemo" points -o "$gen/stations.csv" -n 200000 -edit-box 9950,49950,10050,50050
fgb "$gen/stations.csv" stations.fgb
"$cv" status

step "chunkvc commit (v2)"
before=$(du -sb .git/chunkvc/store | cut -f1)
"$cv" commit -m "v2: resurvey of one valley"
after=$(du -sb .git/chunkvc/store | cut -f1)
echo "the store grew by $((after - before)) bytes: changed chunks are kept as zstd deltas against their previous versions"

step "chunkvc log"
"$cv" log

step "chunkvc ls-chunks dem.tif (first lines)"
"$cv" ls-chunks dem.tif | sed -n 1,8p

step "what Git holds: the manifest diff of v2"
git --no-pager diff --stat HEAD~1 HEAD
git --no-pager diff HEAD~1 HEAD -- .chunkvc/manifests/dem.tif | sed -n 1,30p

step "chunkvc checkout HEAD~1: the first version, byte for byte"
"$cv" checkout HEAD~1 -- dem.tif sensors.parquet stations.fgb
for f in dem.tif sensors.parquet stations.fgb; do
  cmp "$f" "$demo/v1/$f"
  echo "$f: identical to v1 ($(b3sum --no-names "$f" 2>/dev/null || sha256sum "$f" | cut -d' ' -f1))"
done
gdalinfo -checksum dem.tif | awk '/Checksum/ && !n++'
ogrinfo -so -al stations.fgb | grep 'Feature Count'

step "chunkvc checkout: back to v2, and fsck"
"$cv" checkout
"$cv" status
"$cv" fsck --verify=full
echo
echo "demo repository: $demo/repo"
