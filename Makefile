# Developer entry points. `make test` is the command CI runs (.ci/run).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KAFKA_PORT ?= 19092
export KAFKA_PORT

.PHONY: install test unit lint demo bench kafka-start kafka-stop clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'

# The whole suite: unit tests and integration tests against a real local Kafka broker.
test: install
	@set -e; bootstrap=$$(deploy/local/kafka.sh start | tail -n 1); \
	trap 'deploy/local/kafka.sh stop' EXIT; \
	KAFKA_BOOTSTRAP_SERVERS=$$bootstrap $(PY) -m pytest

unit: install
	$(PY) -m pytest tests/unit

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

kafka-start:
	deploy/local/kafka.sh start

kafka-stop:
	deploy/local/kafka.sh stop

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
