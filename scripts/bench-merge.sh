# shellcheck shell=bash
# Sourced by scripts/bench.sh (never run alone: BENCH_ONLY=merge scripts/bench.sh):
# issue 29's merge row. Two branches each edit a 96×96 window of one large COG
# (BENCH_MERGE_SIZE² pixels, LZW, 256² tiles, no overviews: a window changes
# one or two tiles) far apart; `chunkvc merge` of one into the other is timed
# against `cp` + `b3sum` of the file, in the same run, and the store's growth
# is compared with the tiles the merge had to add. Uses bench.sh's helpers
# (timed, emit, secs, ratio, hb, dub, met, minof, log) and $tmp, $gen, $cv.

msize=$BENCH_MERGE_SIZE
msrc="$tmp/msrc"
mkdir -p "$msrc"
mergecog() { # mergecog OUT [EDIT]: mkdemo terrain → COG of LZW tiles, no overviews
  "$gen/mkdemo" raster -o "$msrc/m.bin" -size "$msize" ${2:+-edit "$2"}
  gdal_translate -q -of COG -co COMPRESS=LZW -co BLOCKSIZE=256 -co OVERVIEWS=NONE -co NUM_THREADS=ALL_CPUS \
    -a_srs EPSG:32633 -a_ullr 500000 4620480 520480 4600000 "$msrc/m.bin" "$1"
  rm -f "$msrc/m.bin" "$msrc/m.hdr"
}
log "merge: generate a ${msize}² COG and its two window edits"
mergecog "$msrc/base.tif"
mergecog "$msrc/ours.tif" "1000,1000,96,96"
mergecog "$msrc/theirs.tif" "$((msize - 2000)),$((msize - 2000)),96,96"
msz=$(stat -c %s "$msrc/base.tif")

m_merge=() m_cpb3=() m_rss=() m_grow=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
  log "merge: run $r/$BENCH_RUNS"
  mr="$tmp/mrepo"
  rm -rf "$mr" && mkdir -p "$mr" && git -C "$mr" init -q
  "$cv" -C "$mr" -q init >/dev/null && "$cv" -C "$mr" -q track '*.tif' >/dev/null
  cp "$msrc/base.tif" "$mr/dem.tif" && "$cv" -C "$mr" -q commit -m base >/dev/null
  git -C "$mr" checkout -q -b theirs
  cp "$msrc/theirs.tif" "$mr/dem.tif" && "$cv" -C "$mr" -q commit -m theirs >/dev/null
  git -C "$mr" checkout -q main && "$cv" -C "$mr" -q checkout --force >/dev/null
  cp "$msrc/ours.tif" "$mr/dem.tif" && "$cv" -C "$mr" -q commit -m ours >/dev/null
  before=$(dub "$mr/.git/chunkvc/store")
  sync
  timed "$cv" -C "$mr" merge --json theirs
  m_merge+=("$T_NS") m_rss+=("$T_RSS")
  m_grow+=($(($(dub "$mr/.git/chunkvc/store") - before)))
  rm -f "$tmp/mcp.tif" && sync
  t0=$(date +%s%N)
  cp "$mr/dem.tif" "$tmp/mcp.tif" && b3sum --num-threads 2 "$tmp/mcp.tif" >/dev/null
  m_cpb3+=($(($(date +%s%N) - t0)))
  rm -f "$tmp/mcp.tif"
done
mm=$(minof "${m_merge[@]}") mc=$(minof "${m_cpb3[@]}")
r_merge=$(ratio "$mm" "$mc")
emit "## Merges (issue 29)" "" \
  "Two branches each edited a 96×96 window of one $(hb "$msz") COG ($msize² pixels, LZW, 256² tiles," \
  "no overviews) far apart; \`chunkvc merge\` splices their tile into our file, stores the merged" \
  "file's new chunks and layout, and commits; best of $BENCH_RUNS runs." "" \
  "| | time | peak RSS | store growth |" "|---|---|---|---|" \
  "| \`chunkvc merge theirs\` | $(secs "$mm") | $(mb "$(minof "${m_rss[@]}")") | $(hb "$(minof "${m_grow[@]}")") |" \
  "| \`cp\` + \`b3sum\` of the file | $(secs "$mc") | | |" \
  "| ratio (target ≤ 1.5×) | $r_merge | | $(met "$r_merge" 1.5) |" ""
