# Sediment's build, test and benchmark entry points. `make test` is what CI
# runs (.ci/run); it installs the servers the tests talk to, then runs every
# test of both modules (the main one and bench/) under the race detector.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

GOBIN := $(shell go env GOPATH)/bin
TOOLS := $(GOBIN)/.sediment-tools
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
NATS_VERSION := v2.15.2
NODE_DRIVER_VERSION := 4.10.0
BENCHTIME ?= 1s
# Pebble, in the bench module, then compresses zstd with klauspost/compress, as
# Sediment does, so that the comparison runs the same compression code.
BENCH_TAGS := -tags pebblegozstd

.PHONY: test test-takeover-long tools bench build fmt-check python-driver node chromium terraform-check
build:
	go build -o bin/sediment ./cmd/sediment

# Servers the tests start on loopback. go install caches its build, so a
# second run costs only the stamp check.
tools: $(TOOLS)/minio-$(MINIO_VERSION) $(TOOLS)/nats-server-$(NATS_VERSION) python-driver \
	$(TOOLS)/node/cassandra-driver-$(NODE_DRIVER_VERSION) chromium

$(TOOLS)/minio-$(MINIO_VERSION):
	go install github.com/minio/minio@$(MINIO_VERSION)
	mkdir -p $(TOOLS) && touch $@

$(TOOLS)/nats-server-$(NATS_VERSION):
	go install github.com/nats-io/nats-server/v2@$(NATS_VERSION)
	mkdir -p $(TOOLS) && touch $@

# The DataStax Python driver from Debian, for the driver tests
# (internal/cqltest/python), run with /usr/bin/python3.
python-driver:
	@/usr/bin/python3 -c 'import cassandra' 2>/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y python3-cassandra; }

# The DataStax Node.js driver from npm, for internal/cqltest/node, under
# $(TOOLS)/node/node_modules (where the test looks), with Debian's Node.js.
node:
	@command -v node >/dev/null && command -v npm >/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y nodejs npm; }

$(TOOLS)/node/cassandra-driver-$(NODE_DRIVER_VERSION): | node
	npm install --prefix $(TOOLS)/node --no-audit --no-fund --no-save cassandra-driver@$(NODE_DRIVER_VERSION)
	touch $@

# The status page's test renders it in headless Chromium.
chromium:
	@command -v chromium >/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y chromium; }

test: tools fmt-check
	go vet ./...
	PATH="$(GOBIN):$$PATH" go test -race -timeout 25m ./...
	cd bench && go vet $(BENCH_TAGS) ./... && PATH="$(GOBIN):$$PATH" go test $(BENCH_TAGS) -race -timeout 10m ./...

# 50 rounds of kill -9 of an ingest node under writes (make test runs 5).
test-takeover-long: tools
	PATH="$(GOBIN):$$PATH" SEDIMENT_TAKEOVER_ROUNDS=50 go test -race -timeout 60m -run '^TestTakeover$$' -v ./internal/clustertest

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Benchmarks of both modules, then one line per figure: <name> <value> <unit>.
bench: tools
	PATH="$(GOBIN):$$PATH" go test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./... | tee bench.out
	cd bench && PATH="$(GOBIN):$$PATH" go test $(BENCH_TAGS) -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./... | tee -a ../bench.out
	@echo; echo "Figures:"; grep '^figure: ' bench.out | sed 's/^figure: //'

# Formatting of the Terraform modules, with tofu (or terraform), then
# validate of the example in a scratch copy when the AWS provider can be
# installed. Not part of `make test`: the CLI is not installed by default and
# the provider needs the registry (see terraform/README.md).
terraform-check:
	@export PATH="$(GOBIN):$$PATH"; tf=$$(command -v tofu || command -v terraform || true); \
	if [ -z "$$tf" ]; then echo "terraform-check: no tofu or terraform on PATH; nothing checked (terraform/README.md says how to build tofu)"; exit 0; fi; \
	echo "$$tf fmt -check -recursive terraform"; "$$tf" fmt -check -recursive terraform; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cp -r terraform "$$tmp/"; \
	if "$$tf" -chdir="$$tmp/terraform/examples/aws" init -backend=false -input=false -no-color >"$$tmp/init.log" 2>&1; then \
		"$$tf" -chdir="$$tmp/terraform/examples/aws" validate -no-color; \
	else \
		echo "terraform-check: the AWS provider cannot be installed here, so validate did not run:"; grep -A2 "^Error" "$$tmp/init.log" || tail -n 5 "$$tmp/init.log"; \
	fi
