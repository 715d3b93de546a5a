#!/usr/bin/env bash
# Install the pinned MinIO server that the S3 tests run against, into
# ${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}/bin, and print the
# binary's path. Idempotent: does nothing when a working binary is there.
# internal/miniotest finds the binary at the same path (or $CHUNKVC_MINIO).
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
cache=${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}
bin="$cache/bin"
minio="$bin/minio"

if [[ -x "$minio" ]] && "$minio" --version >/dev/null 2>&1; then
  echo "$minio"
  exit 0
fi

command -v go >/dev/null 2>&1 || { echo "ensure-minio: go is not on PATH" >&2; exit 1; }
mkdir -p "$bin"
echo "ensure-minio: installing github.com/minio/minio@$MINIO_VERSION into $bin (takes a few minutes)" >&2
# Build outside any module so the repository's go.mod is neither read nor touched.
(cd / && GOBIN="$bin" GOFLAGS=-buildvcs=false GO111MODULE=on CGO_ENABLED=0 \
  go install "github.com/minio/minio@$MINIO_VERSION")
"$minio" --version >/dev/null 2>&1 || { echo "ensure-minio: $minio does not run" >&2; exit 1; }
echo "$minio"
