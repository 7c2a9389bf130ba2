# Sediment's build, test and benchmark entry points. `make test` is what CI
# runs (.ci/run); it installs the servers the tests talk to, then runs every
# test of both modules (the main one and bench/) under the race detector, and
# every benchmark once (bench-check).

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

.PHONY: test test-takeover-long tools bench bench-check build fmt-check python-driver node chromium terraform-check mutate
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
	$(MAKE) --no-print-directory bench-check

# 50 rounds of kill -9 of an ingest node under writes (make test runs 5).
test-takeover-long: tools
	PATH="$(GOBIN):$$PATH" SEDIMENT_TAKEOVER_ROUNDS=50 go test -race -timeout 60m -run '^TestTakeover$$' -v ./internal/clustertest

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every benchmark of both modules once, so that one that breaks (fails,
# panics, or trips an invariant) fails `make test`; nothing else runs them in
# CI. -short cuts their long runs (the amplification loads, sweeps, rounds):
# the figures of this pass mean nothing. Go never caches a -bench run. Not
# under -race: the tests already run the code the benchmarks drive with the
# race detector, and on the shared 2-core machine the pass took 9.5 min
# under it (its packages already compiled by the tests) against 5.3 min
# without, compile from an empty build cache included.
bench-check:
	PATH="$(GOBIN):$$PATH" go test -short -run '^$$' -bench . -benchtime 1x -timeout 15m ./...
	cd bench && PATH="$(GOBIN):$$PATH" go test $(BENCH_TAGS) -short -run '^$$' -bench . -benchtime 1x -timeout 15m ./...

# Benchmarks of both modules, then one line per figure: <name> <value> <unit>.
# A failing benchmark does not stop the rest: both modules run, the figures
# are listed, and then make fails.
bench: tools
	@rc=0; export PATH="$(GOBIN):$$PATH"; \
	go test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./... | tee bench.out || rc=1; \
	(cd bench && go test $(BENCH_TAGS) -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./...) | tee -a bench.out || rc=1; \
	echo; echo "Figures:"; grep '^figure: ' bench.out | sed 's/^figure: //' || { echo "make bench: no figures"; rc=1; }; \
	if [ $$rc != 0 ]; then echo "make bench: failed; the FAIL lines of bench.out say where"; fi; exit $$rc

# Formatting of the Terraform modules, with tofu (or terraform), then
# validate of the example in a scratch copy when the AWS provider can be
# installed: from a local provider directory (TF_PLUGIN_DIR, default
# /opt/tf-plugins when it exists, laid out as registry.terraform.io/...),
# else from the registry. Not part of `make test`: the CLI is not installed
# by default (see terraform/README.md).
TF_PLUGIN_DIR ?= $(wildcard /opt/tf-plugins)
terraform-check:
	@export PATH="$(GOBIN):$$PATH"; tf=$$(command -v tofu || command -v terraform || true); \
	if [ -z "$$tf" ]; then echo "terraform-check: no tofu or terraform on PATH; nothing checked (terraform/README.md says how to build tofu)"; exit 0; fi; \
	echo "$$tf fmt -check -recursive terraform"; "$$tf" fmt -check -recursive terraform; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cp -r terraform "$$tmp/"; \
	plugins=; if [ -n "$(TF_PLUGIN_DIR)" ]; then plugins="-plugin-dir=$(TF_PLUGIN_DIR)"; echo "providers from $(TF_PLUGIN_DIR)"; fi; \
	if "$$tf" -chdir="$$tmp/terraform/examples/aws" init -backend=false -input=false -no-color $$plugins >"$$tmp/init.log" 2>&1; then \
		"$$tf" -chdir="$$tmp/terraform/examples/aws" validate -no-color; \
	else \
		echo "terraform-check: the AWS provider cannot be installed here, so validate did not run:"; grep -A2 "^Error" "$$tmp/init.log" || tail -n 5 "$$tmp/init.log"; \
	fi

# Mutation testing with gremlins (docs/testing.md): for each package of
# MUTATE_PKGS (a folder and the packages under it), plants one small bug at
# a time (a flipped or loosened comparison, + for -, ++ for --, a dropped
# minus) in the code its tests cover, runs the package's tests against it,
# and prints the mutants no test caught. A mutant's tests get
# MUTATE_TIMEOUT_COEFFICIENT times the clean run's time. MUTATE_EXCLUDE is a
# list of regexps of file paths (relative to the package folder) left
# unmutated: the budget, with the package list. Not part of `make test`:
# the default set takes 15 to 20 minutes on two cores.
GREMLINS_VERSION := v0.6.0
MUTATE_PKGS ?= ./internal/model ./internal/keys ./internal/kv ./internal/token
MUTATE_EXCLUDE ?=
MUTATE_WORKERS ?= 1
MUTATE_TIMEOUT_COEFFICIENT ?= 10
MUTATE_OUT ?= mutate.out
# To the recipe's shell as a variable: regexps are no shell syntax.
export MUTATE_EXCLUDE

$(TOOLS)/gremlins-$(GREMLINS_VERSION):
	go install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)
	mkdir -p $(TOOLS) && touch $@

mutate: $(TOOLS)/gremlins-$(GREMLINS_VERSION)
	@set -f; export PATH="$(GOBIN):$$PATH"; : > $(MUTATE_OUT); \
	excl=; for e in $$MUTATE_EXCLUDE; do excl="$$excl -E $$e"; done; \
	for p in $(MUTATE_PKGS); do \
		echo "== $$p" | tee -a $(MUTATE_OUT); \
		gremlins unleash --workers $(MUTATE_WORKERS) --timeout-coefficient $(MUTATE_TIMEOUT_COEFFICIENT) $$excl $$p 2>&1 \
			| sed "s|\( at \)\([^ ]*\.go:\)|\1$${p#./}/\2|" | tee -a $(MUTATE_OUT); \
	done; \
	awk '/^Killed:/ { gsub(",", ""); k += $$2; l += $$4; nc += $$7 } /^Timed out:/ { gsub(",", ""); t += $$3; nv += $$6 } \
		END { d = k + t; printf "\nmutants: %d caught (%d killed, %d timed out), %d survived, %d not viable, %d not covered\n", d, k, t, l, nv, nc; \
		if (d + l > 0) printf "score: %.1f%%\n", 100 * d / (d + l) }' $(MUTATE_OUT); \
	echo "survivors:"; grep -E '^ +LIVED ' $(MUTATE_OUT) | sed 's/^ *LIVED /  /' || echo "  none"
