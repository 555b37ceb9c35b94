# Developer entry points. `make test` is the whole suite, the README's test command, and what CI
# runs after `make lint` (.ci/run): `make test-main` and `make test-faults` at once, on two brokers.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The test broker gets its own port, so it never collides with a demo/dev broker on 9092.
TEST_KAFKA_PORT ?= 19092

.PHONY: install install-worker test test-main test-faults unit lint demo bench kafka-start kafka-stop clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Building the package already runs the warm-up (setup.py: the Unicode fold table and every
# kernel compiled into numba's cache inside the package), with the numba of pip's isolated
# build environment; running it again with the venv's own numba costs a second when they
# agree and compiles when they do not, so the first `neardup-stream dedup` always starts warm.
install: $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m neardup_stream.warmup

# What the demo needs and no more: the package with its worker extra (no test or lint tools).
install-worker: $(PY)
	$(PY) -m pip install --quiet -e '.[worker]'
	$(PY) -m neardup_stream.warmup

# Runs $(1) with KAFKA_BOOTSTRAP_SERVERS set to a local test broker on $(TEST_KAFKA_PORT),
# started first (reused if this checkout's broker already runs) and stopped afterwards.
define with_test_broker
	@set -e; export KAFKA_PORT=$(TEST_KAFKA_PORT); \
	bootstrap=$$(deploy/local/kafka.sh start | tail -n 1); \
	trap 'deploy/local/kafka.sh stop' EXIT; \
	export KAFKA_BOOTSTRAP_SERVERS=$$bootstrap; $(1)
endef

# Extra pytest arguments for the three targets below, e.g. PYTEST_ARGS="-x --durations=20".
PYTEST_ARGS ?=

# Unit tests and integration tests against a real local Kafka broker, except the slow
# fault-injection scenarios (marked `faults`), which `make test-faults` runs.
test-main: install
	$(call with_test_broker,$(PY) -m pytest -m "not faults" $(PYTEST_ARGS))

# The fault-injection scenarios (tests/integration/test_faults_*.py): kills, pauses, outages,
# storms, against the real broker.
test-faults: install
	$(call with_test_broker,$(PY) -m pytest -m faults $(PYTEST_ARGS))

# The whole suite (the README's test command; CI runs it): both of the above at once, each
# against a broker of its own (the fault half restarts and pauses brokers; the main half must
# not see that). Both test brokers start from empty data (the topics of earlier runs would
# pile up until the broker's heap runs out), and the main one first, so a first start
# fetches the broker jars once. The fault run's output follows.
FAULTS_KAFKA_PORT ?= 19192
test: install
	@set -e; for port in $(TEST_KAFKA_PORT) $(FAULTS_KAFKA_PORT); do \
		KAFKA_PORT=$$port deploy/local/kafka.sh reset >/dev/null; done; \
	KAFKA_PORT=$(TEST_KAFKA_PORT) deploy/local/kafka.sh start >/dev/null; \
	log=$$(mktemp); \
	$(MAKE) --no-print-directory -o install test-faults TEST_KAFKA_PORT=$(FAULTS_KAFKA_PORT) \
		PYTEST_ARGS="-p no:cacheprovider $(PYTEST_ARGS)" >"$$log" 2>&1 & faults=$$!; \
	main=0; $(MAKE) --no-print-directory -o install test-main || main=$$?; \
	fault=0; wait $$faults || fault=$$?; \
	echo "== make test-faults (exit $$fault)"; cat "$$log"; rm -f "$$log"; \
	exit $$((main || fault))

# The main job end to end: local broker, a worker, a bundled sample, a summary.
# The demo's own flags go in ARGS, e.g. `make demo ARGS="--metrics-port 9200 --stop-broker"`.
ARGS ?=
demo: install-worker
	PYTHON=$(PY) bash deploy/local/demo/run.sh $(ARGS)

# Benchmarks (not part of the tests): quality/speed vs peers, memory, Kafka end to end.
bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m bench.bench_dedup --docs 20000 --out bench/results
	$(PY) -m bench.bench_memory --docs 100000 1000000 --json bench/results/memory.json
	$(PY) -m bench.bench_kafka

unit: install
	$(PY) -m pytest tests/unit

# ruff, mypy, and the import contract (the core imports no Kafka, no worker: tests/unit/test_layering.py)
lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/unit/test_layering.py

# The local broker on $KAFKA_PORT (default 9092), e.g. `make kafka-stop KAFKA_PORT=9192`.
kafka-start:
	$(if $(KAFKA_PORT),KAFKA_PORT=$(KAFKA_PORT) )deploy/local/kafka.sh start

kafka-stop:
	$(if $(KAFKA_PORT),KAFKA_PORT=$(KAFKA_PORT) )deploy/local/kafka.sh stop

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
