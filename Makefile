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
# which scripts/azurite installs (pinned npm package), starts and stops.
AZSTORE = $(if $(wildcard azstore/go.mod),./azstore/...)
PACKAGES = ./... ./pebblestore/... ./examples/... ./bench/... ./cmd/indextable/... $(AZSTORE)

.PHONY: test azurite bench bench-pebble bench-azurite bench-sharded bench-compare fuzz lint examples

# vet, then every test of every module with the race detector (under Azurite
# when the Azure store exists).
test:
	$(GO) vet $(PACKAGES)
	$(if $(AZSTORE),scripts/azurite )$(GO) test -race -count=1 -timeout=$(TESTTIMEOUT) $(PACKAGES)

# The Azure Table store's tests against a fresh in-memory Azurite.
azurite:
	scripts/azurite $(GO) test -race -count=1 -timeout=$(TESTTIMEOUT) ./azstore/...

# The benchmarks at 100,000 records, with the google/btree floor in the same run
# (BENCHTIME operations each, BENCHCOUNT times: compare medians).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) .

# The Pebble store at 100,000 and 1,000,000 records, each strategy against raw
# Pebble writes in the same run (about 5 minutes).
bench-pebble:
	cd pebblestore && $(GO) test -run='^$$' -bench='Pebble/100k' -benchmem -benchtime=2000x -count=5 .
	cd pebblestore && $(GO) test -run='^$$' -bench='Pebble/1M' -benchmem -benchtime=2000x -count=3 .

# The Azure Table store's writes, range reads and gets on Azurite, in one run (about 2 minutes).
bench-azurite:
	scripts/azurite $(GO) test -run='^$$' -bench=Azurite -benchmem -benchtime=400x -count=5 ./azstore/

# A ShardedStore of 4 memory shards under each index rule against one memory store, in one run
# (about 30 seconds).
bench-sharded:
	$(GO) test -run='^$$' -bench=BenchmarkSharded -benchmem -benchtime=10000x -count=5 .

# This library against go-memdb, buntdb and google/btree by hand (the floor), one workload of
# 100,000 customers, in one run, then the scaling run at 10,000 to 1,000,000 (about 6 minutes);
# writes bench/results.md: medians, ratios to the floor, the targets checked, the scaling table.
bench-compare:
	cd bench && $(GO) test -run='^$$' -bench=Compare -benchmem -benchtime=20000x -count=5 . > compare.out
	cd bench && $(GO) test -run='^$$' -bench=Scaling -count=3 . >> compare.out
	cd bench && $(GO) run ./cmd/benchtable < compare.out > results.md
	cat bench/results.md

# Each fuzz target (the core's and the Azure key encoding's) for FUZZTIME.
fuzz:
	@for p in . ./azstore; do \
		for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "== $$p $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$p || exit 1; \
		done; \
	done

# gofmt and vet must be clean.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PACKAGES)

examples:
	$(GO) run ./examples/customers
	$(GO) run ./examples/movies
	$(GO) run ./examples/lifecycle
	$(GO) run ./examples/sharded
