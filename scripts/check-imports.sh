#!/usr/bin/env bash
# Layering check: imports point down
#   cmd/chunkvc → serve → repo → {formats, manifest, store} → hashing
# (internal/progress and internal/writeback are leaves anyone may import),
# serve uses repo's exported API only and nothing but cmd/chunkvc imports it,
# only repo/internal/gitdb imports go-git, nothing under repo/internal
# imports repo, only store/s3 imports minio-go, only the gdal build-tagged
# package imports godal.
#
# With --stdin it checks lines "<package> <import>..." from standard input
# instead of `go list`: how scripts/check-imports_test.sh proves each rule
# refuses what it should.
set -euo pipefail
mod=github.com/chunkvc/chunkvc
fail=0
while read -r pkg imports; do
  rel=${pkg#"$mod"}; rel=${rel#/}
  for imp in $imports; do
    irel=${imp#"$mod"/}
    bad=""
    case "$imp" in
      github.com/go-git/*) [[ $rel == repo/internal/gitdb ]] || bad="only repo/internal/gitdb may import go-git" ;;
      github.com/minio/minio-go/*) [[ $rel == store/s3 ]] || bad="only store/s3 may import minio-go" ;;
      github.com/airbusgeo/godal*) [[ $rel == gdal || $rel == */gdal ]] || bad="only the gdal package may import godal" ;;
    esac
    if [[ $imp == "$mod"/* ]]; then
      case "$rel" in
        hashing|internal/progress|internal/writeback) [[ $irel == internal/progress ]] || bad="$rel is a leaf" ;;
        manifest) [[ $irel == hashing ]] || bad="manifest may import only hashing" ;;
        store|store/*) [[ $irel == hashing || $irel == store || $irel == store/* || $irel == internal/progress || $irel == internal/writeback ]] || bad="store may import only hashing and the leaf helpers" ;;
        formats|formats/*) [[ $irel == hashing || $irel == formats || $irel == formats/* ]] || bad="formats may import only hashing" ;;
        repo) [[ $irel != cmd/* && $irel != repo ]] || bad="repo may not import commands" ;;
        repo/internal/*) [[ $irel != cmd/* && $irel != repo && $irel != serve && $irel != serve/* ]] || bad="$rel may not import repo or what sits above it" ;;
        serve) [[ $irel == repo || $irel == manifest || $irel == store || $irel == hashing || $irel == geom ]] || bad="serve may import only repo, manifest, store, hashing and geom" ;;
        scripts/*) ;;
      esac
      if [[ $irel == serve || $irel == serve/* ]] && [[ $rel != cmd/chunkvc ]]; then
        bad="only cmd/chunkvc may import serve"
      fi
    fi
    if [[ -n $bad ]]; then echo "layering: $pkg imports $imp: $bad" >&2; fail=1; fi
  done
done < <(if [[ ${1:-} == --stdin ]]; then cat; else go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...; fi)
exit $fail
