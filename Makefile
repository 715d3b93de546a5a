# chunkvc — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin/chunkvc
CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/chunkvc
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# PROFILE=1 builds in the CHUNKVC_CPUPROFILE/TRACE/MEMPROFILE hooks.
PTAGS := $(if $(PROFILE),profile,)
# GDAL-backed features (normalize, PNG previews, reprojection) when
# libgdal-dev is present.
TAGS := $(if $(shell command -v gdal-config 2>/dev/null),gdal,)
export CHUNKVC_MINIO ?= $(CACHE)/bin/minio
FUZZTIME ?= 30s

.PHONY: all build deps test check test-short demo bench fuzz soak lint clean

all: build

deps:
	@scripts/ensure-deps.sh
	@scripts/ensure-minio.sh >/dev/null
	@scripts/ensure-azurite.sh >/dev/null
	@scripts/ensure-fake-gcs.sh >/dev/null
	@scripts/ensure-golangci.sh >/dev/null

# bin/chunkvc is pure Go (fast start: built with cgo, which net and os/user
# take up when gcc is around, it was dynamically linked and started 1.3 ms
# slower, 7.4 against 6.3 ms for a status); bin/chunkvc-gdal, built when
# GDAL is installed, runs what needs GDAL (normalize, diff pictures) and
# chunkvc hands those commands to it. bin/chunkvc-gcs, always built (it
# needs no system package), is the one with Google Cloud Storage: linking
# that SDK into bin/chunkvc would cost every command ~45 ms of start-up
# (27 -> 68 MB), so chunkvc hands it what needs a gs:// store, and clones.
# It has GDAL too when TAGS has it, so one hand-over is always enough.
build:
	CGO_ENABLED=0 $(GO) build -tags '$(PTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/chunkvc
	CGO_ENABLED=$(if $(TAGS),1,0) $(GO) build -tags 'gcs $(TAGS) $(PTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)-gcs ./cmd/chunkvc
	$(if $(TAGS),$(GO) build -tags '$(TAGS) $(PTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)-gdal ./cmd/chunkvc)

# The whole suite with real git, GDAL tools and a MinIO server on loopback
# (started and stopped by the tests); the pure-Go build and vet with
# CGO_ENABLED=0 so `go install` keeps working without GDAL.
# deps first, then a fresh make so TAGS sees a GDAL it may just have installed.
test: deps
	$(MAKE) --no-print-directory check

check: lint
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) vet -tags '$(TAGS) profile' ./...
	$(GO) vet -tags 'gcs $(TAGS)' ./cmd/chunkvc ./repo
	$(GO) test -tags '$(TAGS)' -count=1 -timeout 40m ./...

test-short:
	$(GO) test -short ./...

demo:
	@scripts/ensure-deps.sh
	$(MAKE) --no-print-directory build
	scripts/demo.sh

bench:
	$(MAKE) --no-print-directory build PROFILE=1
	@scripts/ensure-deps.sh --bench
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh $(FUZZTIME)

# gofmt, the layering rules, file and function sizes (600 lines a file,
# 120 a function in repo/), generated code matching its generator, and
# golangci-lint (errcheck, staticcheck, unused, ineffassign, govet and the
# layering again as depguard rules; .golangci.yml).
lint:
	gofmt -l . | tee /dev/stderr | (! read -r)
	scripts/check-imports.sh
	scripts/check-imports_test.sh
	scripts/check-size.sh
	scripts/check-size_test.sh
	@tmp=$$(mktemp -d) && (cd hashing && $(GO) run ./internal/x16gen -out $$tmp/x16_amd64.s) && \
	  cmp -s $$tmp/x16_amd64.s hashing/x16_amd64.s; rc=$$?; rm -rf $$tmp; \
	  [ $$rc -eq 0 ] || { echo "hashing/x16_amd64.s differs from what go generate ./hashing writes" >&2; exit 1; }
	"$$(scripts/ensure-golangci.sh)" run --allow-parallel-runners --build-tags '$(TAGS)' --timeout 15m ./...

# Commands killed at random for longer than make test does (CHUNKVC_SOAK
# per store: a local folder and MinIO).
SOAK ?= 10m
soak: deps
	CHUNKVC_SOAK=$(SOAK) $(GO) test -count=1 -timeout 3h -run 'TestSoak' -v ./cmd/chunkvc

clean:
	rm -rf bin demo
