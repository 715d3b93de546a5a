#!/usr/bin/env bash
# Upload throughput to a loopback MinIO: `chunkvc commit` to an s3:// store
# versus `rclone copy` of the same bytes, in one run. Writes
# docs/BENCHMARKS_S3.md. BENCH_S3_MB sets the data size (default 256).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cv="$top/bin/chunkvc"
[[ -x $cv ]] || { echo "bench-s3: build first (make build)" >&2; exit 1; }
command -v rclone >/dev/null || { echo "bench-s3: rclone missing (scripts/ensure-deps.sh --bench)" >&2; exit 1; }
minio=$("$top/scripts/ensure-minio.sh")
mb=${BENCH_S3_MB:-256}
tmp=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
user=bench$RANDOM; pass=benchsecret$RANDOM$RANDOM
MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$pass MINIO_BROWSER=off \
  "$minio" server --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$((port + 1))" "$tmp/data" >"$tmp/minio.log" 2>&1 &
pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

mkdir -p "$tmp/files"
for i in $(seq 1 $((mb / 32))); do head -c $((32 << 20)) /dev/urandom >"$tmp/files/part-$i.bin"; done
bytes=$(du -cb "$tmp"/files/*.bin | tail -1 | cut -f1)

unset AWS_CA_BUNDLE  # http endpoint; a CA bundle makes rclone refuse its transport
export AWS_ACCESS_KEY_ID=$user AWS_SECRET_ACCESS_KEY=$pass AWS_ENDPOINT_URL_S3="http://127.0.0.1:$port" AWS_REGION=us-east-1
export RCLONE_CONFIG_M_TYPE=s3 RCLONE_CONFIG_M_PROVIDER=Minio RCLONE_CONFIG_M_ENDPOINT="http://127.0.0.1:$port" \
  RCLONE_CONFIG_M_ACCESS_KEY_ID=$user RCLONE_CONFIG_M_SECRET_ACCESS_KEY=$pass RCLONE_CONFIG_M_REGION=us-east-1

now() { date +%s.%N; }
# chunkvc: chunk (CDC), hash, upload, verify, commit.
mkdir -p "$tmp/repo" && cd "$tmp/repo"
git init -q && git config user.name bench && git config user.email bench@invalid
"$cv" init -q --store s3://bench-chunkvc/repo
"$cv" track -q '*.bin'
cp "$tmp"/files/*.bin .
t0=$(now); "$cv" commit -q -m bench >/dev/null; t1=$(now)
cvs=$(echo "$t1 - $t0" | bc -l)

rclone mkdir m:bench-rclone
t0=$(now); rclone copy --s3-no-check-bucket "$tmp/files" m:bench-rclone/files; t1=$(now)
rcs=$(echo "$t1 - $t0" | bc -l)

mbs() { echo "scale=1; $bytes / 1048576 / $1" | bc -l; }
ratio=$(printf %.2f "$(echo "$cvs / $rcs" | bc -l)")
out="$top/docs/BENCHMARKS_S3.md"
mkdir -p "$top/docs"
{
  echo "# Upload to loopback MinIO: chunkvc vs rclone"
  echo
  echo "$(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), MinIO on the same machine; $((bytes >> 20)) MiB of random data in 32 MiB files."
  echo "chunkvc cuts it into ~64 KiB content-defined chunks, hashes them, writes them into 64 MiB packs that upload in the background while it hashes, then uploads the pack indexes, verifies and commits; rclone copies whole files (multipart)."
  echo
  echo "| tool | seconds | MiB/s | time vs rclone |"
  echo "|---|---|---|---|"
  echo "| chunkvc commit | $(printf %.2f "$cvs") | $(mbs "$cvs") | $ratio× |"
  echo "| rclone copy | $(printf %.2f "$rcs") | $(mbs "$rcs") | 1.00× |"
  echo
  echo "Measured with \`scripts/bench-s3.sh\` (BENCH_S3_MB=$mb)."
} >"$out"
cat "$out"
