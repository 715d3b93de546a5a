# chunkvc — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin/chunkvc
CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/chunkvc
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
FUZZTIME ?= 30s

.PHONY: all build deps test test-short demo bench fuzz lint clean

all: build

deps:
	@scripts/ensure-deps.sh

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/chunkvc

# The whole suite with real git and GDAL tools; the pure-Go build and vet
# with CGO_ENABLED=0 so `go install` keeps working without GDAL.
test: deps
	gofmt -l . | tee /dev/stderr | (! read -r)
	scripts/check-imports.sh
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

test-short:
	$(GO) test -short ./...

demo: deps build
	scripts/demo.sh

bench: build
	@scripts/ensure-deps.sh --bench
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh $(FUZZTIME)

lint:
	gofmt -l . | tee /dev/stderr | (! read -r)
	scripts/check-imports.sh
	$(GO) vet ./...

clean:
	rm -rf bin demo
