#!/usr/bin/env bash
# Install what `make test` / `make demo` / `make bench` need and a fresh
# machine lacks: GDAL (tools + headers) always; benchmark peers with --bench.
# Uses apt-get (as root, or through sudo). Idempotent and quiet when all is there.
set -euo pipefail

need=()
command -v gdalinfo >/dev/null 2>&1 || need+=(gdal-bin)
command -v ogr2ogr >/dev/null 2>&1 || need+=(gdal-bin)
command -v gdal-config >/dev/null 2>&1 || need+=(libgdal-dev)
command -v git >/dev/null 2>&1 || need+=(git)
# Headless Chromium runs the review page's browser test (diff/review).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# zarr-python and xarray write and read the Zarr stores of formats/zarr's
# tests; modules, not commands, so ask Debian's interpreter for them.
/usr/bin/python3 -c 'import zarr, xarray, fsspec, aiohttp, numcodecs' >/dev/null 2>&1 ||
  need+=(python3-zarr python3-xarray python3-fsspec python3-aiohttp python3-numcodecs)
if [[ "${1:-}" == "--bench" ]]; then
  command -v b3sum >/dev/null 2>&1 || need+=(b3sum)
  command -v git-lfs >/dev/null 2>&1 || need+=(git-lfs)
  command -v restic >/dev/null 2>&1 || need+=(restic)
  command -v borg >/dev/null 2>&1 || need+=(borgbackup)
  command -v casync >/dev/null 2>&1 || need+=(casync)
  command -v rclone >/dev/null 2>&1 || need+=(rclone)
  command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
  [[ -x /usr/bin/time ]] || need+=(time)
  command -v bc >/dev/null 2>&1 || need+=(bc)
fi
[[ ${#need[@]} -eq 0 ]] && exit 0

# De-duplicate.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
echo "ensure-deps: installing ${need[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "ensure-deps: need root or sudo to apt-get install ${need[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
