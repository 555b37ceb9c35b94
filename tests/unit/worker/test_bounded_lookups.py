"""Every look-up of a group consumer's offsets in `neardup_stream/worker/` is bounded. kafka-python's
`KafkaConsumer.committed`, and its `position` while any assigned partition has no position
yet, ask the group coordinator and without `timeout_ms` wait forever while it is away (a
broker pause): the role thread that asked would hang, past its stop and its health check.
The callers retry a `KafkaTimeoutError` (`partitions.COMMITTED_TIMEOUT_MS`,
`partitions.position`)."""

from __future__ import annotations

import ast
from pathlib import Path

WORKER = Path(__file__).resolve().parents[3] / "worker"


def unbounded_calls() -> list[str]:
    """`<consumer>.committed(...)` and `<consumer>.position(...)` calls without `timeout_ms`,
    as `path:line` (the group-less readers never ask a coordinator)."""
    found = []
    for path in sorted(WORKER.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("committed", "position") or "consumer" not in ast.unparse(
                node.func.value
            ):
                continue
            if not any(k.arg == "timeout_ms" for k in node.keywords):
                found.append(f"{path.relative_to(WORKER.parent)}:{node.lineno}")
    return found


def test_every_group_offset_look_up_has_a_timeout() -> None:
    assert unbounded_calls() == []
