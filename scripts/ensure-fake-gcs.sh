#!/usr/bin/env bash
# Install the pinned fake-gcs-server (a Google Cloud Storage emulator) that
# the GCS tests run against, into
# ${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}/bin, and print
# the binary's path. Idempotent: does nothing when a working binary of the
# pinned version is there. internal/gcstest finds the binary at the same
# path (or $CHUNKVC_FAKE_GCS).
set -euo pipefail

FAKE_GCS_VERSION=v1.56.1
cache=${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}
bin="$cache/bin"
server="$bin/fake-gcs-server"
stamp="$server.version"

if [[ -x "$server" && "$(cat "$stamp" 2>/dev/null)" == "$FAKE_GCS_VERSION" ]] && "$server" -help >/dev/null 2>&1; then
  echo "$server"
  exit 0
fi

command -v go >/dev/null 2>&1 || { echo "ensure-fake-gcs: go is not on PATH" >&2; exit 1; }
mkdir -p "$bin"
echo "ensure-fake-gcs: installing github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION into $bin" >&2
# Build outside any module so the repository's go.mod is neither read nor touched.
(cd / && GOBIN="$bin" GOFLAGS=-buildvcs=false GO111MODULE=on CGO_ENABLED=0 \
  go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION")
"$server" -help >/dev/null 2>&1 || { echo "ensure-fake-gcs: $server does not run" >&2; exit 1; }
echo "$FAKE_GCS_VERSION" >"$stamp"
echo "$server"
