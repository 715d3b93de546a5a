#!/usr/bin/env bash
# Size check: no non-test, non-generated .go file of the module over 600
# lines, and no function in repo/ (subpackages too, tests excepted) over
# 120 lines (STYLE §20; REVIEW finding 8). Lists the offenders and exits 1.
#
#   scripts/check-size.sh [module root]
#
# The root defaults to this checkout; scripts/check-size_test.sh points it
# at temp trees. The parsing is scripts/internal/checksize (go/ast).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$here}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/checksize" ./scripts/internal/checksize)
"$bin/checksize" "$root"
