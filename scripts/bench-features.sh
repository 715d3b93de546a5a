# shellcheck shell=bash
# Sourced by scripts/bench.sh (never run alone: BENCH_ONLY=features scripts/bench.sh):
# issue 31's row. `chunkvc diff --features` of a one-row edit in one row group
# of a BENCH_FEATURES_MB megabyte GeoParquet (65536-row groups, zstd),
# against decoding every row group of both versions (Kart-style full
# decoding), both in BenchmarkDiffFeaturesOneRowGroup of cmd/chunkvc, which
# builds its own binary and files under $tmp. Uses bench.sh's helpers (emit,
# secs, ratio, hb, met, log) and $top, $tmp.

log "features: ${BENCH_FEATURES_MB} MB GeoParquet, one row edited (go test -bench DiffFeaturesOneRowGroup)"
(cd "$top" && TMPDIR="$tmp" CHUNKVC_BENCH_FEATURES_MB=$BENCH_FEATURES_MB \
  go test ./cmd/chunkvc -run '^$' -bench DiffFeaturesOneRowGroup -benchtime 1x -timeout 90m) >"$tmp/features.out"
# metric VALUE-NAME SUB: the value before NAME on SUB's Benchmark line.
fmetric() { awk -v n="$1" -v s="$2" '$1 ~ s { for (i = 3; i < NF; i++) if ($(i+1) == n) print $i }' "$tmp/features.out"; }
f_ns=$(fmetric ns/op changed-row-groups) f_read=$(fmetric bytes_read/op changed-row-groups)
f_rg=$(fmetric rg_bytes changed-row-groups) f_rg2=$(fmetric rg_bytes_both changed-row-groups)
f_size=$(fmetric file_bytes changed-row-groups) f_full=$(fmetric ns/op full-decode)
r_fread=$(ratio "$f_read" "$f_rg")
emit "## Feature diff of a one-row-group edit (issue 31)" "" \
  "One row of the middle row group of a $(hb "$f_size") GeoParquet (random points; row groups of 65536 rows," \
  "zstd) changed; \`chunkvc diff HEAD~1 HEAD --features --json\` decodes only the pages whose chunks changed," \
  "against decoding every row group of both versions as a diff that does not know the changed pages must" \
  "(formats/parquet/rows, in process). One run each (\`go test ./cmd/chunkvc -bench DiffFeaturesOneRowGroup" \
  "-benchtime 1x\` with CHUNKVC_BENCH_FEATURES_MB=$BENCH_FEATURES_MB)." "" \
  "| | time | bytes read |" "|---|---|---|" \
  "| \`chunkvc diff --features\` | $(secs "$f_ns") | $(hb "$f_read") (\`bytes_read\` of \`--json\`) |" \
  "| full decoding of both versions | $(secs "$f_full") | $(hb "$((2 * f_size))") |" \
  "| ratio | $(ratio "$f_ns" "$f_full") | |" "" \
  "| target | measured | |" "|---|---|---|" \
  "| bytes read ≤ 2 × the changed row group's pages ($(hb "$f_rg"); old and new: $(hb "$f_rg2")) | $r_fread | $(met "$r_fread" 2) |" ""
