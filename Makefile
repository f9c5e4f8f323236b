# Every target does its own set-up on a fresh machine: virtualenv, Python
# packages and (where needed) Debian packages. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CHECKER_DIR := chaos/checker
# Go's caches inside the checkout: CI may run without a HOME.
export GOCACHE := $(CURDIR)/.cache/go-build
export GOPATH := $(CURDIR)/.cache/go
export GOPROXY := off

.PHONY: all venv fuzz chaos chaos-table chaos-tools go-toolchain java-runtime kafka-clients prometheus-tools lincheck test pytest go-test demo bench-log bench-quorum bench-metadata bench-security bench-transactions bench bench-quick bench-deps bench-tools sim sim-controller proto clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Go toolchain for the linearizability checker, from Debian where missing.
# `test` runs go-test first, so Go is there before pytest's checker smoke test.
go-toolchain:
	@command -v go >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq golang-go >/dev/null; }

# iptables for the chaos testbed's network faults, from Debian where missing
# (the tests skip the network faults, saying why, when it cannot be had).
chaos-tools:
	@command -v iptables >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq iptables iproute2 >/dev/null; } || echo "iptables not installed: chaos network faults will be skipped"

# Java 17 for Spark (the spark_jobs tests and the demo's Spark job), from Debian where missing.
java-runtime:
	@command -v java >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

# The Kafka clients tests/kafka_protocol/ drives beside the venv's
# confluent-kafka, aiokafka and kafka-python 3: kcat from Debian where missing
# (its tests skip, saying why, when it cannot be had), and kafka-python 2.x,
# which negotiates differently from 3.x but is the same package `kafka`, so
# the two cannot share site-packages: it goes into a directory of its own that
# the tests put on a subprocess's PYTHONPATH. 2.3.3 is the last 2.x release.
KAFKA_PYTHON_2_VERSION := 2.3.3
KAFKA_PYTHON_2_DIR := $(VENV)/kafka-python-2
KAFKA_PYTHON_2_STAMP := $(KAFKA_PYTHON_2_DIR)/.installed-$(KAFKA_PYTHON_2_VERSION)
$(KAFKA_PYTHON_2_STAMP): $(STAMP)
	rm -rf $(KAFKA_PYTHON_2_DIR)
	$(BIN)/pip install -q --no-deps --target $(KAFKA_PYTHON_2_DIR) 'kafka-python==$(KAFKA_PYTHON_2_VERSION)'
	touch $@

kafka-clients: $(KAFKA_PYTHON_2_STAMP)
	@command -v kcat >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq kcat >/dev/null; } || echo "kcat not installed: its tests will be skipped"

# promtool and prometheus for the monitoring files' tests (tests/kraftlog/test_monitoring_rules.py,
# test_metrics.py), from Debian's prometheus package where missing: unpacked into the venv rather
# than installed, so no Prometheus service is set up or started (the tests skip, saying why, without).
prometheus-tools: venv
	@{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || test -x $(BIN)/prometheus || ( \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && { apt-get update -qq || true; } \
		&& apt-get download -qq prometheus 2>/dev/null && dpkg-deb -x prometheus_*.deb root \
		&& cp root/usr/bin/promtool root/usr/bin/prometheus $(abspath $(BIN))/ ) \
		|| echo "promtool and prometheus not installed: the monitoring tests that need them will be skipped"

go-test: go-toolchain
	cd $(CHECKER_DIR) && test -z "$$(gofmt -l .)" && go vet ./... && go test ./...

$(CHECKER_DIR)/bin/lincheck: go-toolchain $(shell find $(CHECKER_DIR) -name '*.go' 2>/dev/null)
	cd $(CHECKER_DIR) && go build -o bin/lincheck ./cmd/lincheck

lincheck: $(CHECKER_DIR)/bin/lincheck

# Modules run on TEST_WORKERS pytest-xdist workers (grouped and ordered by tests/conftest.py);
# TEST_WORKERS=0 runs them one after another in this process.
TEST_WORKERS ?= 2
pytest: venv chaos-tools java-runtime kafka-clients prometheus-tools bench-deps bench-tools
	$(BIN)/pytest -q --durations=25 $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder)

test: go-test pytest

demo: venv java-runtime
	$(BIN)/python -m kraftlog.demo

# A Spark standalone cluster from PySpark's own distribution (1 master, 2 workers, each its
# own JVM on 127.0.0.1, ports free at start, work dirs in a temporary directory), in the
# foreground: it prints the spark:// URL for spark-submit and `kraftlog spark --master`;
# Ctrl-C (or SIGTERM) stops every process it started, by PID, and removes the directory.
.PHONY: spark-cluster
spark-cluster: venv java-runtime
	$(BIN)/python -m devcluster.spark_standalone $(if $(WORKERS),--workers $(WORKERS))

# tests/spark_jobs/test_standalone.py whole: `make test` runs its worker-kill test (one
# spark-submit); this adds the wordcount job through spark-submit (a second driver, minutes).
.PHONY: spark-cluster-test
spark-cluster-test: venv java-runtime
	KRAFTLOG_SPARK_CLUSTER_JOBS=1 $(BIN)/pytest -q -p no:cacheprovider --durations=0 tests/spark_jobs/test_standalone.py

# The deterministic Raft simulator, 20,000 seeded schedules (the test suite runs the first 500).
sim: venv
	$(BIN)/python -m metadata_quorum.sim --schedules 20000 --seed 0 --jobs 2

# The controller simulator: brokers failing, heartbeats lost, ISR churn (the tests run 300 schedules).
sim-controller: venv
	$(BIN)/python -m metadata_quorum.sim.controller_sim --schedules 5000 --seed 0

# The adversarial fuzzer: random requests for every RPC of every service
# (tests/adversarial/test_fuzz_requests.py), 2000 random examples per RPC
# instead of the few derandomized ones `make test` runs; one real cluster.
FUZZ_EXAMPLES ?= 2000
fuzz: venv
	KRAFTLOG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q -p no:cacheprovider tests/adversarial/test_fuzz_requests.py

# Every chaos scenario for 10 seeds each, 60 s of faults per run, and the table of results
# (docs/chaos.md, "Matrix"). Runs in slices that accumulate in CHAOS_RESULTS: a run already
# there, made with the same settings on this same unmodified commit, is not run again. E.g.
#   make chaos SCENARIOS=kill-leaders,pause SEEDS=0-4 CHAOS_TIME_LIMIT=30 SHARD=1/2 CHAOS_ARGS=--no-network
# The table (CHAOS_RESULTS/matrix.md) is rebuilt after every slice, also one that failed.
SCENARIOS ?= all
SEEDS ?= 0-9
CHAOS_TIME_LIMIT ?= 60
CHAOS_RESULTS ?= chaos-results
SHARD ?=
CHAOS_ARGS ?=
chaos: venv chaos-tools lincheck
	status=0; $(BIN)/kraftlog chaos run --scenario $(SCENARIOS) --seeds $(SEEDS) --time-limit $(CHAOS_TIME_LIMIT) \
		--results $(CHAOS_RESULTS) $(if $(SHARD),--shard $(SHARD)) $(CHAOS_ARGS) || status=$$?; \
	$(BIN)/python -m chaos.matrix_table $(CHAOS_RESULTS) --out $(CHAOS_RESULTS)/matrix.md; exit $$status

# The matrix's Markdown table from every run in CHAOS_RESULTS (any number of slices).
chaos-table: venv
	$(BIN)/python -m chaos.matrix_table $(CHAOS_RESULTS) --out $(CHAOS_RESULTS)/matrix.md

# 30 minutes of steady load under rotating faults; each node's RSS, open fds and
# threads sampled each minute, charted (soak-results/soak.png) and their growth reported.
.PHONY: soak
soak: venv chaos-tools lincheck bench-deps
	$(BIN)/python -m chaos.soak --minutes 30 --results soak-results

# Regenerate kraftlog_api/ (protobuf + gRPC modules) from proto/; commit the result.
proto: venv
	$(BIN)/python proto/generate.py

# The side-by-side suite (kraftlog bench): its Python packages (the bench extra)
# and the peers and tools from Debian where missing; a peer that cannot be had
# is skipped by the suite, which says why. `make bench QUICK=1` is the smallest run.
BENCH_STAMP := $(VENV)/.bench-stamp
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	touch $(BENCH_STAMP)

bench-deps: $(BENCH_STAMP)

bench-tools:
	@missing=; for tool in redis-server nats-server iperf3; do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq || true; for tool in $$missing; do \
		apt-get install -y -qq $$tool >/dev/null || echo "$$tool not installed: kraftlog bench skips it, saying why"; done; fi

bench: venv bench-deps bench-tools
	$(BIN)/kraftlog bench --suite $(or $(SUITE),all) --out bench/results/suite $(if $(QUICK),--quick) $(if $(RECORDS),--records $(RECORDS))

bench-quick: QUICK := 1
bench-quick: bench

bench-log: venv
	$(BIN)/python -m bench.log_append

# The metadata image at 100,000 partitions, built through the controller: snapshot size, write/load time, memory,
# a broker's bytes per replica; the controller's pipelined appends against one at a time. On a real cluster:
# `python -m bench.metadata_scale --cluster` (bench/metadata_cluster.py; minutes per 10,000 partitions).
bench-metadata: venv
	$(BIN)/python -m bench.metadata_scale
	$(BIN)/python -m bench.controller_pipeline

# The cost of security: produce RF3 acks=all and raw fetch, plaintext vs SASL_SSL (+ mTLS between
# nodes), as a ratio; one SCRAM-SHA-256/512 login's time. A few minutes.
bench-security: venv
	$(BIN)/python -m bench.security_cost

# The cost of transactions: transactional produce (RF3 acks=all, 100/1,000/10,000 records a
# transaction) against the idempotent producer, read_committed against read_uncommitted. A few minutes.
bench-transactions: venv
	$(BIN)/python -m bench.transactions

bench-quorum: venv
	$(BIN)/python -m bench.quorum

# A new follower catching up a 1 GB partition with and without a replication throttle (KIP-73), and the
# produce p99 of other partitions meanwhile; SIZE_MB=128 for a shorter run. Several minutes.
.PHONY: bench-reassignment
bench-reassignment: venv
	$(BIN)/python -m bench.reassignment --size-mb $(or $(SIZE_MB),1024)

# A full rolling restart of 3 controllers + 3 brokers under an acks=all load
# (devcluster/roll.py): the roll's time, per node down and back, produce p99 and
# each partition's longest unavailability. A few minutes.
.PHONY: bench-roll
bench-roll: venv
	$(BIN)/python -m bench.rolling_restart

clean:
	rm -rf $(VENV) build *.egg-info
