#!/usr/bin/env bash
# corpus-ab.sh BIN_A BIN_B [CORPUS]: do two chunkvc binaries write the same
# manifests for the same files? A refactor must leave every committed byte
# alone; this shows it on the third-party corpus (../shared/corpus by
# default, its top-level files; Zarr stores aside).
#
# Each binary commits every file of the corpus into a repository of its own;
# then the two .chunkvc/ trees (manifests, shards, config) are compared byte
# for byte, and so is each file's `ls-chunks` and what each commit said on
# stderr (a file one binary refuses must be refused by the other). Prints
# one line per difference and a summary; exits 1 when anything differs.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BIN_A BIN_B [CORPUS]" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
top=$(cd "$(dirname "$0")/.." && pwd)
corpus=$(realpath "${3:-$top/../shared/corpus}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/chunkvc-corpus-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$tmp/gitconfig"
git config --file "$GIT_CONFIG_GLOBAL" user.name "chunkvc ab"
git config --file "$GIT_CONFIG_GLOBAL" user.email "ab@chunkvc.invalid"
git config --file "$GIT_CONFIG_GLOBAL" init.defaultBranch main

mapfile -t files < <(find "$corpus" -maxdepth 1 -type f ! -name SOURCES.tsv ! -name README.md -printf '%f\n' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "corpus-ab: no files in $corpus" >&2; exit 2; }

commit_with() { # commit_with BIN DIR
  local bin=$1 dir=$2 f
  git init -q "$dir"
  (cd "$dir" && "$bin" init -q && "$bin" track -q '*')
  for f in "${files[@]}"; do cp "$corpus/$f" "$dir/"; done
  # The commit may refuse some files (damaged ones); what it says is compared.
  (cd "$dir" && "$bin" commit -m corpus >"$dir.out" 2>"$dir.err") || true
  for f in "${files[@]}"; do
    (cd "$dir" && "$bin" ls-chunks -- "$f" 2>&1 || true) >"$dir.ls.$(printf '%s' "$f" | md5sum | cut -c1-16)"
  done
  sed -i "s#$dir#REPO#g" "$dir.err" "$dir.out"
}

commit_with "$A" "$tmp/a"
commit_with "$B" "$tmp/b"

diffs=0
if ! diff -r "$tmp/a/.chunkvc" "$tmp/b/.chunkvc" >"$tmp/tree.diff"; then
  echo "manifests differ:"; head -n 40 "$tmp/tree.diff" | sed 's/^/  /'
  diffs=$((diffs + 1))
fi
for f in "${files[@]}"; do
  k=$(printf '%s' "$f" | md5sum | cut -c1-16)
  cmp -s "$tmp/a.ls.$k" "$tmp/b.ls.$k" || { echo "ls-chunks differs: $f"; diffs=$((diffs + 1)); }
done
if ! diff "$tmp/a.err" "$tmp/b.err" >"$tmp/err.diff"; then
  echo "commit's stderr differs:"; head -n 20 "$tmp/err.diff"
  diffs=$((diffs + 1))
fi
manifests=$(find "$tmp/a/.chunkvc/manifests" -type f | wc -l)
shards=$(find "$tmp/a/.chunkvc" -path '*/shards/*' -type f | wc -l)
echo "corpus-ab: ${#files[@]} files, $manifests manifests and $shards shard files each; $diffs differences"
[[ $diffs -eq 0 ]]
