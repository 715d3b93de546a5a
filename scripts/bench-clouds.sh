#!/usr/bin/env bash
# bench-s3.sh's row for the other clouds: `chunkvc commit` to a gs:// store
# on fake-gcs-server against `rclone copy` of the same files to the same
# emulator, and the same to an az:// store on Azurite, in one run. Writes
# docs/BENCHMARKS_CLOUDS.md. BENCH_CLOUD_MB sets the data size (default
# 256); BENCH_CLOUDS picks the clouds (default "gcs azure"). Debian's
# rclone 1.60 takes an Azure endpoint only as a domain suffix of
# https://ACCOUNT., so it reaches Azurite's loopback port through an
# account SAS URL, signed here with Azurite's published development key.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cv="$top/bin/chunkvc"
[[ -x $cv && -x $cv-gcs ]] || { echo "bench-clouds: build first (make build)" >&2; exit 1; }
py=/usr/bin/python3  # Debian's, for the SAS signature (standard library only)
command -v rclone >/dev/null || { echo "bench-clouds: rclone missing (scripts/ensure-deps.sh --bench)" >&2; exit 1; }
mb=${BENCH_CLOUD_MB:-256}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export RCLONE_CONFIG=/dev/null  # remotes come from RCLONE_CONFIG_* only
waitport() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "bench-clouds: nothing on port $1" >&2; exit 1; }
now() { date +%s.%N; }

mkdir -p "$tmp/files"
for i in $(seq 1 $((mb / 32))); do head -c $((32 << 20)) /dev/urandom >"$tmp/files/part-$i.bin"; done
bytes=$(du -cb "$tmp"/files/*.bin | tail -1 | cut -f1)

# run NAME STORE-URL RCLONE-REMOTE: one commit and one copy, seconds to $cvs and $rcs.
run() {
  rm -rf "$tmp/repo" && mkdir -p "$tmp/repo" && cd "$tmp/repo"
  git init -q && git config user.name bench && git config user.email bench@invalid
  "$cv" init -q --store "$2"
  "$cv" track -q '*.bin'
  cp "$tmp"/files/*.bin .
  local t0 t1
  t0=$(now); "$cv" commit -q -m bench >/dev/null; t1=$(now)
  cvs=$(echo "$t1 - $t0" | bc -l)
  rclone -q mkdir "$3"
  t0=$(now); rclone -q copy "$tmp/files" "$3/files"; t1=$(now)
  rcs=$(echo "$t1 - $t0" | bc -l)
  cd "$top"
}

mbs() { echo "scale=1; $bytes / 1048576 / $1" | bc -l; }
rows=()
row() { rows+=("| $1 | chunkvc commit | $(printf %.2f "$2") | $(mbs "$2") | $(printf %.2f "$(echo "$2 / $3" | bc -l)")× |"
  "| $1 | rclone copy | $(printf %.2f "$3") | $(mbs "$3") | 1.00× |"); }

# azsas ACCOUNT KEY: an account SAS query (blob service; service, container
# and object resources; read, write, delete, list, add, create) valid a day.
azsas() {
  "$py" - "$1" "$2" <<'PY'
import base64, datetime, hashlib, hmac, sys, urllib.parse
acct, key = sys.argv[1], base64.b64decode(sys.argv[2])
q = {'sv': '2018-11-09', 'ss': 'b', 'srt': 'sco', 'sp': 'rwdlac', 'spr': 'http,https',
     'se': (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).strftime('%Y-%m-%dT%H:%M:%SZ')}
sts = '\n'.join([acct, q['sp'], q['ss'], q['srt'], '', q['se'], '', q['spr'], q['sv'], ''])
q['sig'] = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
print(urllib.parse.urlencode(q))
PY
}

for cloud in ${BENCH_CLOUDS:-gcs azure}; do
  port=$((20000 + RANDOM % 20000))
  case $cloud in
    gcs)
      server=$("$top/scripts/ensure-fake-gcs.sh")
      "$server" -scheme http -host 127.0.0.1 -port "$port" -backend filesystem -filesystem-root "$tmp/gcs" \
        -public-host "127.0.0.1:$port" -external-url "http://127.0.0.1:$port" -log-level warn >"$tmp/gcs.log" 2>&1 &
      pids+=($!); waitport "$port"
      export STORAGE_EMULATOR_HOST="127.0.0.1:$port" GOOGLE_CLOUD_PROJECT=bench
      export RCLONE_CONFIG_G_TYPE="google cloud storage" RCLONE_CONFIG_G_ANONYMOUS=true \
        RCLONE_CONFIG_G_ENDPOINT="http://127.0.0.1:$port/storage/v1/" RCLONE_CONFIG_G_PROJECT_NUMBER=bench
      run gcs gs://bench-chunkvc/repo g:bench-rclone
      row "GCS (fake-gcs-server)" "$cvs" "$rcs" ;;
    azure)
      server=$("$top/scripts/ensure-azurite.sh")
      "$server" --blobHost 127.0.0.1 --blobPort "$port" --location "$tmp/azurite" --skipApiVersionCheck --loose \
        >"$tmp/azurite.log" 2>&1 &
      pids+=($!); waitport "$port"
      # Azurite's well-known development account (docs.microsoft.com: "Use Azurite").
      acct=devstoreaccount1
      key=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==
      export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$acct;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$port/$acct;"
      export RCLONE_CONFIG_A_TYPE=azureblob RCLONE_CONFIG_A_SAS_URL="http://127.0.0.1:$port/$acct?$(azsas "$acct" "$key")"
      run azure az://bench-chunkvc/repo a:bench-rclone
      row "Azure (Azurite)" "$cvs" "$rcs" ;;
    *) echo "bench-clouds: unknown cloud $cloud" >&2; exit 2 ;;
  esac
done

out="$top/docs/BENCHMARKS_CLOUDS.md"
mkdir -p "$top/docs"
{
  echo "# Upload to loopback cloud emulators: chunkvc vs rclone"
  echo
  echo "$(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), each emulator on the same machine; $((bytes >> 20)) MiB of random data in 32 MiB files, the same files for every row."
  echo "chunkvc cuts them into ~64 KiB content-defined chunks, hashes, packs them into ~64 MiB pack objects (store/internal/packstore), uploads, verifies and commits; rclone copies whole files. Emulators are not the services: these rows compare the two clients against the same server, not the clouds."
  echo
  echo "| store | tool | seconds | MiB/s | time vs rclone |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Measured with \`scripts/bench-clouds.sh\` (BENCH_CLOUD_MB=$mb)."
} >"$out"
cat "$out"
