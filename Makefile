# indextable: developer targets. `make test` is what CI runs.
GO ?= go
BENCHTIME ?= 20000x
BENCHCOUNT ?= 5
FUZZTIME ?= 30s
# go test's budget for each package's test binary (10 minutes by default).
# Tests detect a hang by lack of progress (storetest: none for 2 minutes), so
# this budget only stops a hang nothing else detects: it is generous, since a
# busy 2-core machine under the race detector stretches the slowest packages
# (the core's, pebblestore's) to several minutes.
TESTTIMEOUT ?= 1h

# The core module and the nested ones (go.work joins them): Pebble lives in
# pebblestore's module, so the core's go.mod never requires it. The Azure Table
# store's module (azstore) joins them once it exists; its tests need Azurite,
# which scripts/azurite installs (pinned npm package), starts and stops. The
# etcd store's module (etcdstore) joins them the same way; its tests run etcd
# in their own process.
AZSTORE = $(if $(wildcard azstore/go.mod),./azstore/...)
ETCDSTORE = $(if $(wildcard etcdstore/go.mod),./etcdstore/...)
PACKAGES = ./... ./pebblestore/... ./examples/... ./bench/... ./cmd/indextable/... $(AZSTORE) $(ETCDSTORE)

# The release check's program (RELEASING.md) is a module of its own, outside go.work, so
# that neither the core nor the workspace requires golang.org/x/mod.
RELEASEGO = GOWORK=off $(GO) -C internal/releasecheck
RELEASECHECK = $(RELEASEGO) run . -root $(CURDIR)

.PHONY: test azurite bench bench-upkeep bench-pebble bench-etcd bench-azurite bench-azurite-cost bench-sharded bench-compare bench-results fuzz lint examples release-check release-prepare tidy

# vet, then every test of every module and of the release check's program with the race
# detector (under Azurite when the Azure store exists).
test:
	$(GO) vet $(PACKAGES)
	$(RELEASEGO) vet ./...
	$(if $(AZSTORE),scripts/azurite )$(GO) test -race -count=1 -timeout=$(TESTTIMEOUT) $(PACKAGES)
	$(RELEASEGO) test -race -count=1 ./...

# The Azure Table store's tests against a fresh in-memory Azurite.
azurite:
	scripts/azurite $(GO) test -race -count=1 -timeout=$(TESTTIMEOUT) ./azstore/...

# The benchmark targets. Each writes the raw `go test -bench` output of its runs to
# bench/raw/NAME.txt (the date and Go version, then go test's own goos, goarch and cpu
# lines, then the results), replacing it only when every run succeeded, and then
# regenerates bench/results.md from all the raw files (bench-results), so that one
# target refreshes its own section and leaves the others as last measured. Keep the old
# raw file to compare two runs with benchstat. Tables show ratios to a baseline measured
# in the same run, since a shared machine's absolute figures move from run to run.
BENCHRAW = bench/raw
BENCHSTAMP = echo "date: $$(date -u +%Y-%m-%dT%H:%MZ)" && echo "go: $$($(GO) env GOVERSION)"
# $(call benchrun,NAME,COMMANDS): run COMMANDS (from the repository's root, in a
# subshell) into $(BENCHRAW)/NAME.txt, then regenerate bench/results.md.
benchrun = mkdir -p $(BENCHRAW) && ($(BENCHSTAMP) && $(2)) > $(BENCHRAW)/$(1).tmp && \
	mv $(BENCHRAW)/$(1).tmp $(BENCHRAW)/$(1).txt && $(MAKE) --no-print-directory bench-results

# Every codec and strategy at 100,000 records, with the google/btree floor and the keys-only
# floor in the same run (BENCHTIME operations each, BENCHCOUNT times; about 3 minutes), then
# inserts and updates with 0 to 4 indexes of each strategy against the floor with as many
# (10,000 operations each, 5 times; about 15 seconds), then inserts with and without the schema
# version condition, in turns: 50 rounds (the benchmark's own, hence -count=1) of 2,000 inserts
# into each of two tables, which grow as much as BenchmarkTable's (about 15 seconds), then
# two-record transactions against single writes (BENCHTIME iterations of each, BENCHCOUNT
# times; about 10 seconds), then bulk loads of the 100,000 customers against the floor's, one
# load an op, 10 times (about 30 seconds): bench/raw/table.txt.
bench:
	$(call benchrun,table,$(GO) test -run='^$$' -bench='^Benchmark(Table|Floor)$$' -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) . && \
		$(GO) test -run='^$$' -bench='^BenchmarkIndexes$$' -benchmem -benchtime=10000x -count=5 . && \
		$(GO) test -run='^$$' -bench='^BenchmarkVersionCondition$$' -benchmem -benchtime=2000x -count=1 . && \
		$(GO) test -run='^$$' -bench='^BenchmarkTx$$' -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) . && \
		$(GO) test -run='^$$' -bench='^BenchmarkLoad$$' -benchmem -benchtime=1x -count=10 .)

# What an index costs besides its reads: eventual and synchronous writes against
# fact-only ones, the stale check of eventual reads, the maintainer, Verify, and a
# Build over 1,000,000 records (about a minute): bench/raw/upkeep.txt.
bench-upkeep:
	$(call benchrun,upkeep,$(GO) test -run='^$$' -bench='^Benchmark(EventualWrite|EventualRead|Maintainer|Verify)$$' -benchmem -benchtime=20000x -count=5 . && \
		$(GO) test -run='^$$' -bench='^BenchmarkBackfill$$' -benchtime=1x -count=3 .)

# The Pebble store at 100,000 (6 runs) and 1,000,000 records (3 runs), each strategy
# against raw Pebble writes and against raw-indexed, its floor (its records and index entries
# written by hand), in the same run (about 6 minutes), then durable bulk loads of 100,000
# customers against raw Pebble batches, one load an op, 5 times (about 20 seconds):
# bench/raw/pebble.txt.
bench-pebble:
	$(call benchrun,pebble,cd pebblestore && $(GO) test -run='^$$' -bench='Pebble/100k' -benchmem -benchtime=2000x -count=6 . && \
		$(GO) test -run='^$$' -bench='Pebble/1M' -benchmem -benchtime=2000x -count=3 . && \
		$(GO) test -run='^$$' -bench='^BenchmarkLoad$$' -benchmem -benchtime=1x -count=5 .)

# The etcd store on a 3-member etcd cluster in the benchmark's process: inserts and ranges of 100
# of each strategy against raw etcd client calls, with their round trips, in one run (about 30
# seconds): bench/raw/etcd.txt.
bench-etcd:
	$(call benchrun,etcd,$(GO) test -run='^$$' -bench='^BenchmarkEtcd$$' -benchmem -benchtime=1000x -count=5 ./etcdstore/)

# The Azure Table store's writes, range reads and gets on Azurite, in one run (about 2
# minutes), then bulk loads of 2,000 customers in 20 partitions, their requests counted, one
# load an op, 5 times (about 40 seconds): bench/raw/azurite.txt.
bench-azurite:
	$(call benchrun,azurite,scripts/azurite sh -c "$(GO) test -run='^$$' -bench='^BenchmarkAzurite$$' -benchmem -benchtime=400x -count=5 ./azstore/ && \
		$(GO) test -run='^$$' -bench='^BenchmarkLoad$$' -benchmem -benchtime=1x -count=5 ./azstore/")

# What each operation of a table on Azure costs in requests, table scans and entities read, at 500
# and 5,000 movies, before pending changes were hinted and now, in one run (about 10 minutes):
# bench/raw/azurite-cost.txt.
bench-azurite-cost:
	$(call benchrun,azurite-cost,scripts/azurite scripts/bench-azure-cost)

# A ShardedStore of 4 memory shards under each index rule against one memory store, in
# one run, and what finding a key's shard costs (about 30 seconds): bench/raw/sharded.txt.
bench-sharded:
	$(call benchrun,sharded,$(GO) test -run='^$$' -bench='^Benchmark(Sharded|ShardOf)$$' -benchmem -benchtime=10000x -count=5 .)

# This library against go-memdb, buntdb and google/btree by hand (the floor, and the keys-only
# floor, whose indexes hold keys only), one workload of 100,000 customers, in one run, then the
# scaling run at 10,000 to 1,000,000 (about 6 minutes): bench/raw/compare.txt. Its heap bytes
# per record compare with bench/raw/baseline's run, before the work on issue 22.
bench-compare:
	$(call benchrun,compare,cd bench && $(GO) test -run='^$$' -bench=Compare -benchmem -benchtime=20000x -count=5 . && \
		$(GO) test -run='^$$' -bench=Scaling -count=3 .)

# bench/results.md from the raw files in bench/raw, without running anything.
bench-results:
	cd bench && $(GO) run ./cmd/benchtable -o results.md raw

# Each fuzz target (the tuple codec's, the key layout's, the core's and the Azure key encoding's) for FUZZTIME.
fuzz:
	@for p in . ./kv ./internal/tuple ./azstore; do \
		for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "== $$p $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$p || exit 1; \
		done; \
	done

# gofmt and vet must be clean.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PACKAGES)
	$(RELEASEGO) vet ./...

examples:
	$(GO) run ./examples/quickstart
	$(GO) run ./examples/customers
	$(GO) run ./examples/movies
	$(GO) run ./examples/lifecycle
	$(GO) run ./examples/sharded

# Publish the core, the stores and the tool at the version the nested go.mod files require
# them at to a file-based module proxy in a temporary directory, then, in a fresh module
# outside the tree and with a module cache of its own, go get them from it, build and run
# the Quick start and a program on both stores, and go install the tool and run its help.
# STRICT=1 also requires the go.sum lines release-prepare writes. See RELEASING.md.
release-check:
	$(RELEASECHECK)$(if $(STRICT), -strict)

# Make every module require its siblings at VERSION (go.work replaces them by the tree) and
# write their go.sum lines, in dependency order.
release-prepare:
	@test -n "$(VERSION)" || { echo "usage: make release-prepare VERSION=vX.Y.Z" >&2; exit 2; }
	$(RELEASECHECK) -prepare $(VERSION)

# go mod tidy every module of go.work, each against the release check's proxy, since the
# versions its siblings are required at need not exist yet.
tidy:
	$(RELEASECHECK) -tidy
