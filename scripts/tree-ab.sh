#!/usr/bin/env bash
# tree-ab.sh BIN_A BIN_B [EDITS]: which of two chunkvc binaries commits and
# reports status faster on a tree of many small files (make bench's large
# tree), when the difference is smaller than the machine's noise.
#
# Two repositories of the same files go in lockstep: each edit rewrites the
# same 10 files in both, which are then committed, A first for odd edits
# and B first for even ones, and each repository's status is taken (clean)
# in the same alternation. Per edit, the difference B - A cancels what the
# machine did meanwhile; the median of the differences is the answer.
# A third repository, G, is plain Git's (git commit -a, git status) in the
# same lockstep, and each binary's median ratio to it per edit is printed.
#
#   TREE_FILES   files in the tree (default 20000, as make bench)
#   TREE_TMP     parent of the temporary directory (default $TMPDIR or /tmp)
#
# Needs Go and python3. Creating and deleting trees of this size leaves
# ext4 searching past recently deleted inodes for a while: compare binaries
# within one run, not runs made minutes apart.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BIN_A BIN_B [EDITS]" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2") edits=${3:-10}
files=${TREE_FILES:-20000}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TREE_TMP:-${TMPDIR:-/tmp}}/chunkvc-tree-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$tmp/gitconfig"
git config --file "$GIT_CONFIG_GLOBAL" user.name "chunkvc ab"
git config --file "$GIT_CONFIG_GLOBAL" user.email "ab@chunkvc.invalid"
(cd "$top" && go build -o "$tmp/bench" ./scripts/bench)

echo "tree-ab: two repositories of $files files" >&2
for x in A B; do
  bin=$A && [[ $x == B ]] && bin=$B
  git -C "$tmp" init -q "t$x"
  "$bin" -C "$tmp/t$x" -q init >/dev/null
  "$bin" -C "$tmp/t$x" -q track '*.csv' >/dev/null
  "$tmp/bench" tree -dir "$tmp/t$x" -files "$files"
  "$bin" -C "$tmp/t$x" -q commit -m tree >/dev/null
  "$bin" -C "$tmp/t$x" -q status >/dev/null # settles the stat cache
done
git -C "$tmp" init -q tG
"$tmp/bench" tree -dir "$tmp/tG" -files "$files"
git -C "$tmp/tG" add -A && git -C "$tmp/tG" commit -q -m tree && git -C "$tmp/tG" status >/dev/null
for ((r = 1; r <= edits; r++)); do
  sleep 1 # a new mtime
  for x in A B G; do "$tmp/bench" tree -dir "$tmp/t$x" -files "$files" -edit 10 -seed "$r"; done
  sync
  order="B G A" && ((r % 2)) && order="A G B"
  for x in $order; do
    bin=$A && [[ $x == B ]] && bin=$B
    if [[ $x == G ]]; then
      echo "commit G $r $("$tmp/bench" run git -C "$tmp/tG" commit -q -a -m "edit $r")"
    else
      echo "commit $x $r $("$tmp/bench" run "$bin" -C "$tmp/t$x" -q commit -m "edit $r")"
    fi
  done
  for x in $order; do
    bin=$A && [[ $x == B ]] && bin=$B
    if [[ $x == G ]]; then
      echo "status G $r $("$tmp/bench" run git -C "$tmp/tG" status)"
    else
      echo "status $x $r $("$tmp/bench" run "$bin" -C "$tmp/t$x" -q status)"
    fi
  done
done | python3 -c '
import sys, statistics as st
t = {}
for op, x, r, w, c in (l.split() for l in sys.stdin):
    t.setdefault(op, {}).setdefault(x, {})[r] = (int(w) / 1000, int(c) / 1000)
for op, by in t.items():
    for x in "ABG":
        ws = sorted(w for w, _ in by[x].values())
        print("%s %s: wall min %.1f median %.1f ms, CPU median %.1f ms" % (op, x, ws[0], st.median(ws), st.median(c for _, c in by[x].values())))
    d = [by["B"][r][0] - by["A"][r][0] for r in by["A"]]
    print("%s B - A per edit: median %+.1f ms (%d edits)" % (op, st.median(d), len(d)))
    for x in "AB":
        q = [by[x][r][0] / by["G"][r][0] for r in by["G"]]
        c = [by[x][r][1] / by["G"][r][1] for r in by["G"]]
        print("%s %s / git per edit: median %.2f wall, %.2f CPU" % (op, x, st.median(q), st.median(c)))
'
