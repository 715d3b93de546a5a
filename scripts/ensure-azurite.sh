#!/usr/bin/env bash
# Install the pinned Azurite (Azure Storage emulator) that store/azure's tests
# run against, into ${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}/azurite,
# and print the path of its azurite-blob launcher. Installs Debian's nodejs and
# npm with apt-get when node is missing. Idempotent: does nothing when a working
# launcher is there. internal/azuritetest finds it at the same path (or
# $CHUNKVC_AZURITE).
set -euo pipefail

AZURITE_VERSION=3.37.0
cache=${CHUNKVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkvc}
dir="$cache/azurite"
launcher="$dir/node_modules/.bin/azurite-blob"

installed() {
  [[ -x "$launcher" ]] &&
    [[ "$(cd "$dir" && node -p 'require("azurite/package.json").version' 2>/dev/null)" == "$AZURITE_VERSION" ]]
}

if installed; then
  echo "$launcher"
  exit 0
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "ensure-azurite: need root or sudo to apt-get install nodejs npm" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "ensure-azurite: installing nodejs npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

mkdir -p "$dir"
echo "ensure-azurite: installing azurite@$AZURITE_VERSION into $dir" >&2
# A package.json of its own keeps npm from walking up into any other project.
[[ -f "$dir/package.json" ]] || echo '{"name":"chunkvc-azurite","private":true}' >"$dir/package.json"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2)
installed || { echo "ensure-azurite: $launcher is not azurite $AZURITE_VERSION" >&2; exit 1; }
echo "$launcher"
