# bpconvert — the two set-up commands (README.md) and a few helpers.
# `make demo` and `make test` install what is missing first.
GO ?= go
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: deps build demo test test-short fixtures-deps pyenv bench lint fuzz-smoke dist test-dist docs-gen

deps:
	bash scripts/install-deps.sh

# The one version string of a build (printed by `bpconvert version`, recorded
# in every table, run record and Lance manifest): git describe of a tagged
# checkout (the tag, commits since it and the revision; -dirty for uncommitted
# changes). An untagged checkout sets nothing and the build says "(devel)";
# see buildVersion in cmd/bpconvert/cmd_version.go.
GIT_VERSION := $(shell git describe --tags --dirty 2>/dev/null)
VERSION_LDFLAGS = $(if $(GIT_VERSION),-X main.version=$(GIT_VERSION))

# Two programs from one command package: bpconvert (pure Go) and
# bpconvert-lerobot (the same CLI linked with libav), which bpconvert runs
# for convert-lerobot.
build: deps
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/bpconvert ./cmd/bpconvert
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -tags lerobot -o bin/bpconvert-lerobot ./cmd/bpconvert

demo: build
	bash scripts/demo.sh

# Node packages that write test fixtures with independent libraries.
fixtures-deps: deps
	@for d in fixtures/*/; do \
	  if [ -f "$$d/package-lock.json" ]; then \
	    if [ ! -d "$$d/node_modules" ] || [ "$$d/package-lock.json" -nt "$$d/node_modules" ]; then \
	      echo "npm ci in $$d"; (cd "$$d" && npm ci --no-audit --no-fund --loglevel=error) && touch "$$d/node_modules"; \
	    fi; \
	  fi; \
	done

# The pinned Python environments of the tests, made once outside the tree by
# scripts/pyenv.sh: test.txt (independent writers and real consumers:
# pylance, pyarrow, datasets, blobpack, s3fs, duckdb) and airflow.txt
# (Apache Airflow 3.3.2, which runs examples/airflow).
pyenv: deps
	bash scripts/pyenv.sh scripts/requirements/test.txt >/dev/null
	bash scripts/pyenv.sh scripts/requirements/airflow.txt >/dev/null

# The S3 server the object-storage tests start on loopback (Apache-2.0),
# built from its Go module into bin/.
VERSITYGW := bin/versitygw
$(VERSITYGW):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0

TEST_ENV = BPCONVERT_PYTHON=$$(bash scripts/pyenv.sh scripts/requirements/test.txt)/bin/python \
	BPCONVERT_PYTHON_AIRFLOW=$$(bash scripts/pyenv.sh scripts/requirements/airflow.txt)/bin/python \
	BPCONVERT_VERSITYGW=$(CURDIR)/$(VERSITYGW)

test: deps fixtures-deps pyenv $(VERSITYGW)
	$(GO) vet ./...
	$(GO) vet -tags lerobot ./cmd/bpconvert
	@# Fixtures the test packages share are written once for the run, here.
	cache=$$(mktemp -d); $(TEST_ENV) BPCONVERT_FIXTURE_CACHE=$$cache $(GO) test -count=1 -parallel 4 -timeout 40m ./...; \
	  rc=$$?; rm -rf "$$cache"; exit $$rc

# Static checks: formatting, vet, staticcheck (pinned, installed into bin/),
# a go.mod/go.sum that `go mod tidy` would not change, and the pure-Go CLI
# cross-compiled for every platform it is built for.
CROSS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
STATICCHECK := bin/staticcheck
$(STATICCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

# No function, test or not, may be above cyclomatic complexity 40.
GOCYCLO := bin/gocyclo
$(GOCYCLO):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

lint: deps $(STATICCHECK) $(GOCYCLO)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags lerobot ./cmd/bpconvert ./convert/formats ./convert/lerobot/...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags lerobot ./cmd/bpconvert ./convert/formats ./convert/lerobot/...
	$(GO) mod tidy -diff
	@out=$$(git ls-files -z | xargs -0 stat -c '%s %n' | awk '$$1 > 1048576'); if [ -n "$$out" ]; then echo "tracked files above 1 MiB (build outputs and large data do not belong in the tree):"; echo "$$out"; exit 1; fi
	@out=$$($(GOCYCLO) -over 40 $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "above cyclomatic complexity 40 (split into named steps):"; echo "$$out"; exit 1; fi
	@for p in $(CROSS); do echo "go build ./cmd/bpconvert for $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/bpconvert || exit 1; done

# Rewrites the command reference at the end of docs/commands.md from the
# command definitions in cmd/bpconvert (TestCommandsDoc fails when they differ).
docs-gen:
	$(GO) test -count=1 -run '^TestCommandsDoc$$' ./cmd/bpconvert -args -update-docs

# Every fuzz target for a few seconds each (FUZZTIME=5s).
fuzz-smoke: deps
	bash scripts/fuzz-smoke.sh

# Quick loop for development: skips the multi-gigabyte zip64 test.
test-short: fixtures-deps pyenv $(VERSITYGW)
	$(TEST_ENV) $(GO) test -short ./...

# Every benchmark script, one after another (each prints its own baseline).
bench: build fixtures-deps
	for s in pack wds verify read parquet lerobot_video lance lance_convert fanout; do bash bench/$$s.sh || exit 1; done

# A release into dist/ (scripts/dist/dist.sh lists the files): archives of the
# pure-Go CLI for the CROSS platforms, bpconvert-lerobot for linux/amd64 with
# the LGPL FFmpeg libraries it loads (built once by scripts/dist/ffmpeg.sh,
# cached under ~/.cache/bpconvert), Python wheels, the container image,
# CycloneDX SBOMs (made by cyclonedx-gomod, pinned, installed into bin/),
# SHA256SUMS. DIST_PLATFORMS limits the platforms.
CYCLONEDX := bin/cyclonedx-gomod
$(CYCLONEDX):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

.PHONY: dist-deps
dist-deps: deps
	bash scripts/dist/deps.sh

dist: dist-deps $(CYCLONEDX)
	GO=$(GO) DIST_PLATFORMS="$(or $(DIST_PLATFORMS),$(CROSS))" bash scripts/dist/dist.sh

# Builds the linux/amd64 release twice (identical SHA256SUMS), then installs
# the wheel into a fresh virtual environment and unpacks the archives, and
# runs the demo, convert-lerobot and verify --against with each, without Go
# on PATH and with the system's FFmpeg libraries hidden; then unpacks the
# image and runs the conversions in its root filesystem.
test-dist: dist-deps fixtures-deps $(CYCLONEDX)
	GO=$(GO) bash scripts/dist/test-dist.sh
