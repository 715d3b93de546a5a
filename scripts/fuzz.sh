#!/usr/bin/env bash
# Run every Fuzz* target for a bounded time each (default 30s).
set -euo pipefail
t=${1:-30s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($t)"
    go test -run "^$" -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime 2s "$pkg"
  done
done
