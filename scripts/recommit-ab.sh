#!/usr/bin/env bash
# recommit-ab.sh BIN_A BIN_B [ROUNDS]: which of two chunkvc binaries
# re-commits one changed COG of a dozen faster, when the difference is a
# few milliseconds and the machine's noise is more (make bench's best of 3
# cannot tell them apart).
#
# Two repositories go in lockstep: the same 12 LZW COGs (make bench's
# commit-cost set, smaller by default), then edit after edit of the first
# file, each edit committed in both, A first for odd edits and B first for
# even ones. Per edit, the difference B - A cancels what the machine did
# meanwhile; the median of the differences is the answer. Prints the wall
# time (min, quartile, median) and mean CPU time (user + system) of each.
#
#   RECOMMIT_SIZE    side in pixels of the COGs (default 9900, as make bench)
#   RECOMMIT_EDITS   edits per round (default 14)
#   RECOMMIT_TMP     parent of the temporary directory (default $TMPDIR or /tmp)
#
# Needs Go, GDAL tools and python3; the data (about 1 GB at the default
# size) is made from fixed seeds and removed on exit.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BIN_A BIN_B [ROUNDS]" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2") rounds=${3:-2}
size=${RECOMMIT_SIZE:-9900} edits=${RECOMMIT_EDITS:-14}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${RECOMMIT_TMP:-${TMPDIR:-/tmp}}/chunkvc-ab.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$tmp/gitconfig"
git config --file "$GIT_CONFIG_GLOBAL" user.name "chunkvc ab"
git config --file "$GIT_CONFIG_GLOBAL" user.email "ab@chunkvc.invalid"

(cd "$top" && go build -o "$tmp/mkdemo" ./scripts/mkdemo && go build -o "$tmp/bench" ./scripts/bench)
cog() { # cog SIZE OUT [EDIT]: make bench's LZW COG of mkdemo terrain
  "$tmp/mkdemo" raster -o "$tmp/r.bin" -size "$1" ${3:+-edit "$3"} >/dev/null
  gdal_translate -q -of COG -co COMPRESS=LZW -co BLOCKSIZE=256 -co NUM_THREADS=ALL_CPUS \
    -a_srs EPSG:32633 -a_ullr 500000 4620480 520480 4600000 "$tmp/r.bin" "$2"
  rm -f "$tmp/r.bin" "$tmp/r.hdr"
}
echo "recommit-ab: making 12 COGs of ${size}² px and $((edits + 1)) edits of the first" >&2
mkdir -p "$tmp/base" "$tmp/edits"
for ((i = 0; i < 12; i++)); do cog $((size + 16 * i)) "$(printf '%s/base/c%02d.tif' "$tmp" "$i")"; done
for ((r = 1; r <= edits + 1; r++)); do
  at=$((800 * r % (size - 96)))
  cog "$size" "$tmp/edits/e$r.tif" "$at,$at,96,96"
done
git -C "$tmp/base" init -q
"$A" -C "$tmp/base" -q init >/dev/null
"$A" -C "$tmp/base" -q track '*.tif' >/dev/null
"$A" -C "$tmp/base" -q commit -m cold >/dev/null

for ((round = 1; round <= rounds; round++)); do
  echo "recommit-ab: round $round of $rounds" >&2
  for x in A B; do
    bin=$A && [[ $x == B ]] && bin=$B
    rm -rf "$tmp/r$x" && cp -a "$tmp/base" "$tmp/r$x"
    # The first re-commit of a copy reads every file again (new ctimes).
    rm -f "$tmp/r$x/c00.tif" && cp "$tmp/edits/e1.tif" "$tmp/r$x/c00.tif"
    "$bin" -C "$tmp/r$x" -q commit -m "edit 1" >/dev/null
  done
  for ((r = 2; r <= edits + 1; r++)); do
    for x in A B; do rm -f "$tmp/r$x/c00.tif" && cp "$tmp/edits/e$r.tif" "$tmp/r$x/c00.tif"; done
    sync
    order="B A" && ((r % 2)) && order="A B"
    for x in $order; do
      bin=$A && [[ $x == B ]] && bin=$B
      echo "$x $r $("$tmp/bench" run "$bin" -C "$tmp/r$x" -q commit -m "edit $r")"
    done
  done
done | python3 -c '
import sys, statistics as st
wall = {"A": {}, "B": {}}; cpu = {"A": [], "B": []}
for x, r, w, c in (l.split() for l in sys.stdin):
    wall[x].setdefault(r, []).append(int(w) / 1000); cpu[x].append(int(c) / 1000)
diffs = [b - a for r in wall["A"] for a, b in zip(wall["A"][r], wall["B"][r])]
for x in "AB":
    ws = sorted(v for l in wall[x].values() for v in l)
    print("%s: wall min %.1f q1 %.1f median %.1f ms, CPU mean %.1f ms" % (x, ws[0], ws[len(ws) // 4], st.median(ws), st.mean(cpu[x])))
print("B - A per edit: median %+.1f ms, mean %+.1f ms (%d edits)" % (st.median(diffs), st.mean(diffs), len(diffs)))
'
