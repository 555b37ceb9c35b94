#!/usr/bin/env bash
# deploy/local/demo/run.sh — the neardup-stream quick start (`make demo`).
#
# Starts the local Kafka broker (deploy/local/kafka.sh, port $KAFKA_PORT, default 9092),
# runs a worker on fresh demo topics, feeds the bundled English/Chinese news sample, and
# prints what was found. Flags go to deploy/local/demo/demo.py (--help lists them):
#   --stop-broker               stop the broker at the end (default: leave it running)
#   --metrics-port N            worker metrics/health port (default 9108)
#   --bootstrap-servers H:P     use an existing Kafka instead of starting the local broker
# Python: $PYTHON, else .venv/bin/python (made by `make install`), else python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"

if [[ -n "${PYTHON:-}" ]]; then
    PY="$PYTHON"
elif [[ -x .venv/bin/python ]]; then
    PY=.venv/bin/python
else
    PY=python3
    echo "[demo] .venv not found (run 'make install'); using $(command -v python3 || echo python3)" >&2
fi

if ! "$PY" -c 'import kafka, neardup_stream.worker.main' 2>/dev/null; then
    echo "[demo] ERROR: $PY cannot import the project (kafka-python, neardup_stream.worker)." >&2
    echo "[demo] Run 'make install' first (or: pip install -e '.[dev]')." >&2
    exit 1
fi

exec "$PY" deploy/local/demo/demo.py "$@"
