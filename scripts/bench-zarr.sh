# shellcheck shell=bash
# Sourced by scripts/bench.sh (never run alone: BENCH_ONLY=zarr scripts/bench.sh):
# issue 28's rows, a Zarr v2 store of BENCH_ZARR_CHUNKS chunk files tracked as
# one dataset, against plain Git on the same tree and against the peers on
# the same edits. Uses bench.sh's helpers (timed, emit, secs, ratio, hb, dub,
# mb, met, minof, maxof, have, log) and its $tmp, $gen, $cv.

zn=$BENCH_ZARR_CHUNKS
zsrc="$tmp/zsrc"
log "zarr: generate a v2 store of $zn chunk files and its three edits"
"$gen/bench" zarr -dir "$zsrc/base/cube.zarr" -chunks "$zn"
for zrow in edit append rechunk; do
  mkdir -p "$zsrc/$zrow" && cp -r "$zsrc/base/cube.zarr" "$zsrc/$zrow/"
done
"$gen/bench" zarr -dir "$zsrc/edit/cube.zarr" -edit 5 -seed 101
"$gen/bench" zarr -dir "$zsrc/append/cube.zarr" -append 1 -seed 1
"$gen/bench" zarr -dir "$zsrc/rechunk/cube.zarr" -rechunk
zfiles=$(find "$zsrc/base/cube.zarr" -type f | wc -l)
zsize=$(dub "$zsrc/base/cube.zarr")

zrepo() { # zrepo DIR [git]: a repository holding a copy of the base store (tracked by chunkvc, or plain Git)
  rm -rf "$1" && mkdir -p "$1" && git -C "$1" init -q
  # No automatic gc: at 20,000 loose objects a commit starts one in the
  # background, and the measured `git gc` then fails "already running".
  git -C "$1" config gc.auto 0
  git -C "$1" config user.name "chunkvc bench" && git -C "$1" config user.email "bench@chunkvc.invalid"
  cp -r "$zsrc/base/cube.zarr" "$1/"
  [[ ${2:-} == git ]] && return 0
  "$cv" -C "$1" -q init >/dev/null && "$cv" -C "$1" -q track cube.zarr >/dev/null
}

zc_cold=() zc_git=() zc_base=() zc_st=() zg_st=() zc_ed=() zg_ed=() zc_diff=() zc_co=()
zrss_commit=() zrss_status=() zrss_diff=() zrss_co=() zgrow1=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
  log "zarr: timed pairs, run $r/$BENCH_RUNS"
  zrepo "$tmp/zcv" && zrepo "$tmp/zgit" git
  rm -rf "$tmp/zcp"
  sync
  timed "$cv" -C "$tmp/zcv" -q commit -m cold --json
  zc_cold+=("$T_NS") zrss_commit+=("$T_RSS")
  timed bash -c 'git -C "$1" add -A && git -C "$1" commit -qm cold' _ "$tmp/zgit"
  zc_git+=("$T_NS")
  # The hardware floor: hash every file (as chunkvc must) and copy the store.
  timed bash -c 'find "$1" -type f -print0 | xargs -0 b3sum >/dev/null && cp -r "$1" "$2" && sync' _ "$zsrc/base/cube.zarr" "$tmp/zcp"
  zc_base+=("$T_NS")
  rm -rf "$tmp/zcp"
  for ((s = 0; s < 2; s++)); do # status twice per run: BENCH_RUNS + 2 in all, like the large tree's
    timed "$cv" -C "$tmp/zcv" -q status --json
    zc_st+=("$T_NS") zrss_status+=("$T_RSS")
    timed git -C "$tmp/zgit" status --porcelain
    zg_st+=("$T_NS")
  done
  "$gen/bench" zarr -dir "$tmp/zcv/cube.zarr" -edit 5 -seed $((r + 1))
  "$gen/bench" zarr -dir "$tmp/zgit/cube.zarr" -edit 5 -seed $((r + 1))
  sync
  timed "$cv" -C "$tmp/zcv" -q commit -m edit5 --json
  zc_ed+=("$T_NS") zrss_commit+=("$T_RSS")
  timed git -C "$tmp/zgit" commit -qam edit5
  zg_ed+=("$T_NS")
  timed "$cv" -C "$tmp/zcv" -q diff HEAD~1 HEAD
  zc_diff+=("$T_NS") zrss_diff+=("$T_RSS")
  # What one chunk costs Git (the manifest's root and one shard), before git gc.
  "$gen/bench" zarr -dir "$tmp/zcv/cube.zarr" -edit 1 -seed $((r + 50))
  g1=$(dub "$tmp/zcv/.git/objects")
  "$cv" -C "$tmp/zcv" -q commit -m edit1 >/dev/null
  zgrow1+=("$(($(dub "$tmp/zcv/.git/objects") - g1))")
  # A fresh checkout of the whole store: every chunk read back.
  rm -rf "$tmp/zcv/cube.zarr"
  sync
  if timed "$cv" -C "$tmp/zcv" -q checkout HEAD -- cube.zarr; then
    zc_co+=("$T_NS") zrss_co+=("$T_RSS")
  fi
  rm -rf "$tmp/zcv" "$tmp/zgit"
done
z_cold=$(minof "${zc_cold[@]}") z_git=$(minof "${zc_git[@]}") z_base=$(minof "${zc_base[@]}")
z_st=$(minof "${zc_st[@]}") z_gst=$(minof "${zg_st[@]}") z_ed=$(minof "${zc_ed[@]}") z_ged=$(minof "${zg_ed[@]}")
z_diff=$(minof "${zc_diff[@]}") z_grow=$(maxof "${zgrow1[@]}")
z_co=n/a z_rco=n/a
((${#zc_co[@]})) && z_co=$(minof "${zc_co[@]}") z_rco=$(maxof "${zrss_co[@]}")
z_rc=$(maxof "${zrss_commit[@]}") z_rs=$(maxof "${zrss_status[@]}") z_rd=$(maxof "${zrss_diff[@]}")
z_peak=$(maxof "$z_rc" "$z_rs" "$z_rd" "${zrss_co[@]}")

# Each zmeasure_TOOL ROW prints "BYTES NS": what the tool's storage grows
# by when the ROW version of the store follows the base one, and the wall
# time of storing it. zswap replaces the work tree's store by ROW's.
zswap() { rm -rf "$1/cube.zarr"; cp -r "$zsrc/$2/cube.zarr" "$1/"; sync; } # zswap WORKDIR ROW
zmeasure_chunkvc() {
  local w="$tmp/t/chunkvc" s1 s2 g1 g2 up
  zrepo "$w" || return 1
  "$cv" -C "$w" -q commit -m v1 >/dev/null || return 1
  git -C "$w" gc -q --aggressive >/dev/null 2>&1 || return 1
  s1=$(dub "$w/.git/chunkvc/store") g1=$(dub "$w/.git/objects")
  zswap "$w" "$1"
  timed "$cv" -C "$w" -q commit -m v2 --json || return 1
  up=$(jq -r .bytes_uploaded "$tmp/cmd.out") || return 1
  s2=$(dub "$w/.git/chunkvc/store")
  git -C "$w" gc -q --aggressive >/dev/null 2>&1 || return 1
  g2=$(dub "$w/.git/objects")
  echo "$((s2 - s1)) $T_NS $up $((g2 - g1))"
}
zmeasure_lfs() {
  have git-lfs || return 1
  local w="$tmp/t/lfs" s1 s2
  mkdir -p "$w"
  git init -q --bare "$w/remote.git"
  zrepo "$w/work" git
  (cd "$w/work" && git lfs install --local >/dev/null && git lfs track "cube.zarr/**" >/dev/null &&
    git add -A && git commit -qm v1 &&
    git remote add origin "file://$w/remote.git" && git push -q origin "$(git branch --show-current)") >/dev/null 2>&1 || return 1
  s1=$(dub "$w/remote.git/lfs/objects")
  zswap "$w/work" "$1"
  timed bash -c 'cd "$1" && git add -A && git commit -qm v2 && git push -q origin "$(git branch --show-current)"' _ "$w/work" || return 1
  s2=$(dub "$w/remote.git/lfs/objects")
  echo "$((s2 - s1)) $T_NS"
}
zmeasure_restic() {
  have restic || return 1
  local w="$tmp/t/restic" s1 s2
  restic -q -r "$w/repo" init --repository-version 2 >/dev/null 2>&1 ||
    restic -q -r "$w/repo" init >/dev/null 2>&1 || return 1
  zrepo "$w/data" git
  (cd "$w/data" && restic -q --no-cache -r "$w/repo" backup cube.zarr) >/dev/null 2>&1 || return 1
  s1=$(dub "$w/repo")
  zswap "$w/data" "$1"
  timed bash -c 'cd "$1" && restic -q --no-cache -r "$2" backup cube.zarr' _ "$w/data" "$w/repo" || return 1
  s2=$(dub "$w/repo")
  echo "$((s2 - s1)) $T_NS"
}
zmeasure_borg() {
  have borg || return 1
  local w="$tmp/t/borg" s1 s2
  mkdir -p "$w"
  borg init --encryption=none "$w/repo" >/dev/null 2>&1 || return 1
  zrepo "$w/data" git
  (cd "$w/data" && borg create "$w/repo::v1" cube.zarr) >/dev/null 2>&1 || return 1
  s1=$(dub "$w/repo")
  zswap "$w/data" "$1"
  timed bash -c 'cd "$1" && borg create "$2::v2" cube.zarr' _ "$w/data" "$w/repo" || return 1
  s2=$(dub "$w/repo")
  echo "$((s2 - s1)) $T_NS"
}
zmeasure_casync() { # casync make of a directory writes a .caidx (a catalogue of the tree)
  have casync || return 1
  local w="$tmp/t/casync" s1 s2
  mkdir -p "$w/store"
  casync make --store="$w/store" --chunk-size=65536 --compression=zstd "$w/v1.caidx" "$zsrc/base/cube.zarr" >/dev/null 2>&1 || return 1
  s1=$(dub "$w")
  timed casync make --store="$w/store" --chunk-size=65536 --compression=zstd "$w/v2.caidx" "$zsrc/$1/cube.zarr" || return 1
  s2=$(dub "$w")
  echo "$((s2 - s1)) $T_NS"
}
zmeasure_gitgc() {
  local w="$tmp/t/git" s1 s2
  zrepo "$w" git
  (cd "$w" && git add -A && git commit -qm v1 && git gc -q --aggressive) >/dev/null 2>&1 || return 1
  s1=$(dub "$w/.git/objects")
  zswap "$w" "$1"
  timed bash -c 'cd "$1" && git add -A && git commit -qm v2 && git gc -q --aggressive' _ "$w" || return 1
  s2=$(dub "$w/.git/objects")
  echo "$((s2 - s1)) $T_NS"
}

declare -A ZB ZT
zrows=(edit append rechunk)
declare -A zrowname=([edit]="5 chunk files rewritten" [append]="one time step appended (1,000 chunk files)" [rechunk]="re-chunked 1×16×16 → 2×16×16")
declare -A ztoolname=([chunkvc]=chunkvc [lfs]="Git LFS" [restic]=restic [borg]=borg [casync]=casync [gitgc]="git gc")
ztools=(chunkvc lfs restic borg casync gitgc)
for zrow in "${zrows[@]}"; do
  for tool in "${ztools[@]}"; do
    log "zarr bytes stored: ${zrowname[$zrow]} — ${ztoolname[$tool]}"
    rm -rf "$tmp/t" && mkdir -p "$tmp/t"
    if res=$("zmeasure_$tool" "$zrow"); then
      read -r b t up git <<<"$res"
      ZB[$zrow,$tool]=$b ZT[$zrow,$tool]=$t
      [[ $tool == chunkvc ]] && ZB[$zrow,up]=$up ZB[$zrow,git]=$git
    else
      ZB[$zrow,$tool]=n/a ZT[$zrow,$tool]=n/a
    fi
    chmod -R u+w "$tmp/t" 2>/dev/null || true
    rm -rf "$tmp/t"
  done
done

emit "## Zarr store (issue 28)" "" \
  "A Zarr v2 store (\`scripts/bench zarr -chunks $zn\`: a group with one array t2m, \"<f4\", 1×16×16 chunks," \
  "zlib; seeded temperature-like values rounded to 1/64 K) of $zfiles files, $(hb "$zsize"), tracked as one" \
  "dataset (\`chunkvc track cube.zarr\`); plain Git commits the same tree. Wall time, best of $BENCH_RUNS runs" \
  "(\`status\`: of $((2 * BENCH_RUNS))); peak RSS: maximum of \`/usr/bin/time -v\` over the runs." "" \
  "| operation | chunkvc | peak RSS | baseline | baseline time | ratio | target |" "|---|---:|---:|---|---:|---:|---|" \
  "| first commit | $(secs "$z_cold") | $(mb "$z_rc") | \`git add -A && git commit\` | $(secs "$z_git") | $(ratio "$z_cold" "$z_git") | |" \
  "| first commit | $(secs "$z_cold") | | b3sum of every file + \`cp -r\` + \`sync\` | $(secs "$z_base") | $(ratio "$z_cold" "$z_base") | ≤ 1.3× |" \
  "| \`status\`, nothing changed | $(secs "$z_st") | $(mb "$z_rs") | \`git status\` | $(secs "$z_gst") | $(ratio "$z_st" "$z_gst") | ≤ 1.0× |" \
  "| commit of 5 changed chunks | $(secs "$z_ed") | (above) | \`git commit -a\` | $(secs "$z_ged") | $(ratio "$z_ed" "$z_ged") | ≤ 1.0× |" \
  "| \`diff HEAD~1 HEAD\` after the 5-chunk edit | $(secs "$z_diff") | $(mb "$z_rd") | | | | |" \
  "| checkout of the whole store (removed first) | $( [[ $z_co == n/a ]] && echo n/a || secs "$z_co") | $( [[ $z_rco == n/a ]] && echo n/a || mb "$z_rco") | | | | |" \
  "| \`.git/objects\` growth of a one-chunk edit, before git gc | $(hb "$z_grow") | | | | | ≤ 64 KB |" ""

emit "Bytes stored per edit of the store, counted as in \"Bytes stored for a local edit\" above (Git LFS tracks" \
  "\`cube.zarr/**\`; casync makes a \`.caidx\` of the directory; restic and borg back up the directory):" "" \
  "| edit | chunkvc | + Git | Git LFS | restic | borg | casync | git gc | least peer | chunkvc ÷ least peer | chunkvc + Git ÷ least peer |" \
  "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
zlosses=() zgitlosses=()
for zrow in "${zrows[@]}"; do
  best="" bestn=""
  for tool in lfs restic borg casync gitgc; do
    v=${ZB[$zrow,$tool]}
    [[ $v =~ ^[0-9]+$ ]] || continue
    if [[ -z $best ]] || ((v < best)); then best=$v bestn=${ztoolname[$tool]}; fi
  done
  c=${ZB[$zrow,chunkvc]}
  if [[ $c =~ ^[0-9]+$ && -n $best ]] && ((c > best)); then zlosses+=("${zrowname[$zrow]}: chunkvc $(hb "$c") vs $bestn $(hb "$best") ($(ratio "$c" "$best"))"); fi
  tot=n/a
  [[ $c =~ ^[0-9]+$ && ${ZB[$zrow,git]:-} =~ ^-?[0-9]+$ ]] && tot=$((c + ZB[$zrow,git]))
  if [[ $tot =~ ^[0-9]+$ && -n $best ]] && ((tot > best)); then zgitlosses+=("${zrowname[$zrow]}: chunkvc + Git $(hb "$tot") vs $bestn $(hb "$best") ($(ratio "$tot" "$best"))"); fi
  cells=""
  for tool in lfs restic borg casync gitgc; do cells+=" $(hb "${ZB[$zrow,$tool]}") |"; done
  emit "| ${zrowname[$zrow]} | $(hb "$c") ($(hb "${ZB[$zrow,up]:-n/a}")) | $(hb "$tot") |$cells ${bestn:-n/a} ($(hb "${best:-n/a}")) | $(ratio "$c" "$best") | $(ratio "$tot" "$best") |"
done
emit "" "Wall time of storing the edited store (commit / push / backup / make / gc):" "" \
  "| edit | chunkvc | Git LFS | restic | borg | casync | git gc |" "|---|---:|---:|---:|---:|---:|---:|"
for zrow in "${zrows[@]}"; do
  cells=""
  for tool in "${ztools[@]}"; do
    t=${ZT[$zrow,$tool]}
    [[ $t == n/a ]] && cells+=" n/a |" || cells+=" $(secs "$t") |"
  done
  emit "| ${zrowname[$zrow]} |$cells"
done
emit ""

zleast="least on all ${#zrows[@]} edits | met"
((${#zlosses[@]})) && zleast="least on $((${#zrows[@]} - ${#zlosses[@]})) of ${#zrows[@]} edits | **missed**"
zgleast="least on all ${#zrows[@]} edits | met"
((${#zgitlosses[@]})) && zgleast="least on $((${#zrows[@]} - ${#zgitlosses[@]})) of ${#zrows[@]} edits | **missed**"
emit "## Targets (issue 28)" "" "| target | measured | |" "|---|---|---|" \
  "| $zn chunks: \`status\`, nothing changed ≤ 1.0 × \`git status\` | $(ratio "$z_st" "$z_gst") | $(met "$(ratio "$z_st" "$z_gst")" 1.0) |" \
  "| commit of 5 changed chunks ≤ 1.0 × \`git commit -a\` | $(ratio "$z_ed" "$z_ged") | $(met "$(ratio "$z_ed" "$z_ged")" 1.0) |" \
  "| cold commit ≤ 1.3 × (b3sum + cp + sync) | $(ratio "$z_cold" "$z_base") | $(met "$(ratio "$z_cold" "$z_base")" 1.3) |" \
  "| commit, checkout, diff under 300 MB peak RSS (here at $zn chunks; the issue asks it at 1,000,000) | commit $(mb "$z_rc"), checkout $( [[ $z_rco == n/a ]] && echo n/a || mb "$z_rco"), diff $(mb "$z_rd") | $(awk -v k="$z_peak" 'BEGIN{ print (k/1024 <= 300 ? "met" : "**missed**") }') |" \
  "| a one-chunk edit adds ≤ 64 KB to Git | $(hb "$z_grow") | $( ((z_grow <= 65536)) && echo met || echo '**missed**') |" \
  "| chunkvc stores the least per edit (5 chunks, one time step, a re-chunk) | $zleast |" \
  "| … counting its Git objects | $zgleast |" ""
for l in "${zlosses[@]}" "${zgitlosses[@]}"; do emit "- $l"; done
((${#zlosses[@]} + ${#zgitlosses[@]})) && emit ""
rm -rf "$zsrc"
