#!/usr/bin/env bash
# Install the pinned golangci-lint that `make lint` runs, into
# ${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}/bin, and print the
# binary's path. Idempotent: does nothing when the pinned version is there.
set -euo pipefail

VERSION=v2.15.0
cache=${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}
bin="$cache/bin"
lint="$bin/golangci-lint"

if [[ -x "$lint" ]] && "$lint" version 2>/dev/null | grep -q "version ${VERSION#v}"; then
  echo "$lint"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "ensure-golangci: go is not on PATH" >&2; exit 1; }
mkdir -p "$bin"
echo "ensure-golangci: installing golangci-lint $VERSION into $bin (takes a few minutes)" >&2
# Outside any module, so the repository's go.mod is neither read nor touched.
(cd / && GOBIN="$bin" GOFLAGS=-buildvcs=false GO111MODULE=on \
  go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION")
"$lint" version >/dev/null 2>&1 || { echo "ensure-golangci: $lint does not run" >&2; exit 1; }
echo "$lint"
