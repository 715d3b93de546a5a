#!/usr/bin/env bash
# Layering check: imports point down
#   cmd/chunkvc → serve → repo → {diff, formats, manifest, store} → {hashing, geom}
# with diff → {manifest, formats, geom, hashing, diff/featurediff},
# diff/featurediff → {geom, hashing} and manifest, formats →
# {hashing, geom}; internal/diffview renders diff results without repo;
# serve uses repo's exported API only and nothing but cmd/chunkvc imports it
# (geom, internal/progress and internal/writeback are leaves anyone may
# import); only repo/internal/gitdb imports go-git, nothing under
# repo/internal imports repo, and inside it:
#   confine, pattern, fileio     import no chunkvc package
#   statcache, blockcache        hashing, manifest, confine, gitdb
#   journal                      hashing, statcache
#   readpath                     hashing, store, store/local
#   derived                      formats, hashing
#   boxsel                       manifest, formats, geom, hashing
#   lockfile                     confine
#   reach                        hashing, manifest, gitdb
#   gc                           hashing, store, gitdb, reach, registry
#   fsck                         hashing, manifest, store, gitdb, reach,
#                                internal/progress
#   diffscan                     diff, formats, manifest, hashing, gitdb,
#                                reach, statcache
#   dataset                      formats, formats/zarr, manifest, hashing, geom,
#                                statcache, walk
# formats/zarr/codec imports no chunkvc package and formats/zarr/georef
# only geom: formats/zarr builds on both.
# only store/s3 imports minio-go, only store/azure the Azure SDK, only
# store/gcs the Google Cloud SDK (cloud.google.com/go/storage,
# google.golang.org/api, grpc, genproto), only the gdal build-tagged
# package imports godal, and parquet-go is for tests, pqgen and scripts only.
#
# With --stdin it checks lines "<package> <import>..." from standard input
# instead of `go list`: how scripts/check-imports_test.sh proves each rule
# refuses what it should. With --deps-stdin it checks a dependency list of
# the everyday binary (one package a line) from standard input instead of
# `go list -deps ./cmd/chunkvc`.
set -euo pipefail
# heavy lists the packages of the dependency list on standard input the
# everyday binary must not link, each with why.
heavy() {
  local p
  while read -r p; do
    case "$p" in
      cloud.google.com/*|google.golang.org/api|google.golang.org/api/*|google.golang.org/grpc|google.golang.org/grpc/*)
        echo "$p: only the gcs build may link the Google Cloud SDK" ;;
      github.com/parquet-go/*|google.golang.org/protobuf/*)
        echo "$p: parquet-go (and the protobuf it brings) cost every command its start-up; formats/parquet decodes rows itself" ;;
    esac
  done
}
if [[ ${1:-} == --deps-stdin ]]; then
  found=$(heavy)
  if [[ -n $found ]]; then
    echo "layering: cmd/chunkvc depends on ${found%%$'\n'*}" >&2
    exit 1
  fi
  exit 0
fi
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
      github.com/Azure/azure-sdk-for-go/*) [[ $rel == store/azure ]] || bad="only store/azure may import the Azure SDK" ;;
      cloud.google.com/go/*|google.golang.org/api/*|google.golang.org/grpc*|github.com/googleapis/*|golang.org/x/oauth2/google*) [[ $rel == store/gcs ]] || bad="only store/gcs may import the Google Cloud SDK" ;;
      github.com/airbusgeo/godal*) [[ $rel == gdal || $rel == */gdal ]] || bad="only the gdal package may import godal" ;;
      github.com/parquet-go/*) [[ $rel == formats/parquet/pqgen || $rel == scripts/* ]] || bad="only tests, pqgen and scripts may import parquet-go (it costs every command ~4 ms of start-up and 22 MB: formats/parquet decodes rows itself)" ;;
    esac
    if [[ $imp == "$mod"/* ]]; then
      case "$rel" in
        hashing|internal/progress|internal/writeback) [[ $irel == internal/progress ]] || bad="$rel is a leaf" ;;
        geom) bad="geom is a leaf" ;;
        manifest) [[ $irel == hashing || $irel == geom ]] || bad="manifest may import only hashing and geom" ;;
        store|store/*) [[ $irel == hashing || $irel == store || $irel == store/* || $irel == internal/progress || $irel == internal/writeback ]] || bad="store may import only hashing and the leaf helpers" ;;
        diff) [[ $irel == manifest || $irel == geom || $irel == hashing || $irel == formats || $irel == formats/* || $irel == diff/featurediff ]] || bad="diff may import only manifest, formats, geom, hashing and diff/featurediff" ;;
        diff/featurediff) [[ $irel == geom || $irel == hashing ]] || bad="diff/featurediff may import only geom and hashing" ;;
        internal/diffview) [[ $irel != repo && $irel != repo/* && $irel != cmd/* ]] || bad="diffview may not import repo" ;;
        formats/zarr/codec) bad="formats/zarr/codec imports no chunkvc package" ;;
        formats/zarr/georef) [[ $irel == geom ]] || bad="formats/zarr/georef may import only geom" ;;
        formats|formats/*) [[ $irel == hashing || $irel == geom || $irel == formats || $irel == formats/* ]] || bad="formats may import only hashing and geom" ;;
        repo) [[ $irel != cmd/* && $irel != repo ]] || bad="repo may not import commands" ;;
        repo/internal/confine|repo/internal/pattern|repo/internal/fileio) bad="$rel is a leaf" ;;
        repo/internal/statcache|repo/internal/blockcache) [[ $irel == hashing || $irel == manifest || $irel == repo/internal/confine || $irel == repo/internal/gitdb ]] || bad="$rel may import only hashing, manifest, repo/internal/confine and repo/internal/gitdb" ;;
        repo/internal/journal) [[ $irel == hashing || $irel == repo/internal/statcache || $irel == repo/internal/binrec ]] || bad="repo/internal/journal may import only hashing, repo/internal/statcache and repo/internal/binrec" ;;
        repo/internal/binrec) bad="repo/internal/binrec imports nothing of chunkvc's" ;;
        repo/internal/walk) [[ $irel == repo/internal/statcache ]] || bad="repo/internal/walk may import only repo/internal/statcache" ;;
        repo/internal/lockfile) [[ $irel == repo/internal/confine ]] || bad="repo/internal/lockfile may import only repo/internal/confine" ;;
        repo/internal/boxsel) [[ $irel == manifest || $irel == geom || $irel == hashing || $irel == formats || $irel == formats/* ]] || bad="repo/internal/boxsel may import only manifest, formats, geom and hashing" ;;
        repo/internal/derived) [[ $irel == hashing || $irel == formats || $irel == formats/* ]] || bad="repo/internal/derived may import only formats and hashing" ;;
        repo/internal/readpath) [[ $irel == hashing || $irel == store || $irel == store/local ]] || bad="repo/internal/readpath may import only hashing, store and store/local" ;;
        repo/internal/reach) [[ $irel == hashing || $irel == manifest || $irel == repo/internal/gitdb ]] || bad="repo/internal/reach may import only hashing, manifest and repo/internal/gitdb" ;;
        repo/internal/gc) [[ $irel == hashing || $irel == store || $irel == repo/internal/gitdb || $irel == repo/internal/reach || $irel == repo/internal/registry ]] || bad="repo/internal/gc may import only hashing, store, repo/internal/gitdb, reach and registry" ;;
        repo/internal/fsck) [[ $irel == hashing || $irel == manifest || $irel == store || $irel == internal/progress || $irel == repo/internal/gitdb || $irel == repo/internal/reach ]] || bad="repo/internal/fsck may import only hashing, manifest, store, internal/progress, repo/internal/gitdb and reach" ;;
        repo/internal/diffscan) [[ $irel == diff || $irel == formats || $irel == formats/* || $irel == manifest || $irel == hashing || $irel == repo/internal/gitdb || $irel == repo/internal/reach || $irel == repo/internal/statcache ]] || bad="repo/internal/diffscan may import only diff, formats, manifest, hashing, repo/internal/gitdb, reach and statcache" ;;
        repo/internal/dataset) [[ $irel == hashing || $irel == geom || $irel == manifest || $irel == formats || $irel == formats/zarr || $irel == repo/internal/statcache || $irel == repo/internal/walk || $irel == repo/internal/binrec ]] || bad="repo/internal/dataset may import only formats, formats/zarr, manifest, hashing, geom, repo/internal/statcache, repo/internal/walk and repo/internal/binrec" ;;
        repo/internal/*) [[ $irel != cmd/* && $irel != repo && $irel != serve && $irel != serve/* ]] || bad="$rel may not import repo or what sits above it" ;;
        serve) [[ $irel == repo || $irel == manifest || $irel == formats || $irel == store || $irel == hashing || $irel == geom ]] || bad="serve may import only repo, manifest, formats (names), store, hashing and geom" ;;
        scripts/*) ;;
      esac
      if [[ $irel == serve || $irel == serve/* ]] && [[ $rel != cmd/chunkvc ]]; then
        bad="only cmd/chunkvc may import serve"
      fi
    fi
    if [[ -n $bad ]]; then echo "layering: $pkg imports $imp: $bad" >&2; fail=1; fi
  done
done < <(if [[ ${1:-} == --stdin ]]; then cat; else go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...; fi)
# The everyday binary links no cloud SDK and no parquet-go, which cost
# every command its start-up: gs:// is for chunkvc-gcs, built with
# -tags gcs, and formats/parquet decodes rows without parquet-go.
if [[ ${1:-} != --stdin ]]; then
  found=$(CGO_ENABLED=0 go list -deps ./cmd/chunkvc | heavy)
  if [[ -n $found ]]; then
    echo "layering: cmd/chunkvc without -tags gcs depends on ${found%%$'\n'*}" >&2
    fail=1
  fi
fi
exit $fail
