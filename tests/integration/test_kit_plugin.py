"""The pytest plugin in a user's suite: 20 tests on one shared broker, no cross-talk.

A generated test file (what a user would write, see docs/testing.md) runs in a pytest
subprocess that loads the plugin through its `pytest11` entry point, as an installed package
does. Every one of its 20 tests sends the same texts under its own ids through the
`neardup_worker` fixture and asserts that exactly its own outcomes arrive, decided against
an index of its own only: the first text is unique in every test (with a shared index or
shared topics it would be a duplicate of another test's document, or foreign ids would
arrive). The example test of docs/testing.md runs in the same session. Afterwards no topic
of the suite is left on the broker.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from tests.integration.harness import REPO_ROOT

pytestmark = pytest.mark.integration

USER_SUITE = """
import pytest

TEXT = (
    "The harbour authority said on Tuesday that the new container terminal would open in the "
    "spring after two years of construction, doubling the port's capacity for ships."
)
OTHER = "A completely different story about a local bakery winning a national bread award."


@pytest.mark.parametrize("n", range(20))
def test_NAME(neardup_worker, n):
    mine = [f"u{n}-first", f"u{n}-copy", f"u{n}-other"]
    neardup_worker.send_documents(
        [{"id": mine[0], "text": TEXT}, {"id": mine[1], "text": TEXT}, {"id": mine[2], "text": OTHER}]
    )
    neardup_worker.send(b"{not json", key=f"u{n}-bad".encode())
    got = neardup_worker.wait_for(4, timeout=60)
    assert sorted(o.id for o in got) == sorted([*mine, f"u{n}-bad"])
    kinds = {o.id: o.kind for o in got}
    assert kinds == {
        mine[0]: "unique", mine[1]: "duplicate", mine[2]: "unique", f"u{n}-bad": "dead_letter"
    }
    copy = next(o for o in got if o.id == mine[1]).json()
    assert copy["duplicate_of"] == mine[0]
"""


def docs_example() -> str:
    """The complete example test of docs/testing.md."""
    text = (REPO_ROOT / "docs" / "testing.md").read_text()
    found = re.search(r"```python\n(# tests/test_dedup_stage\.py\n.*?)```", text, re.DOTALL)
    assert found is not None, "docs/testing.md lost its example test"
    return found.group(1)


def plugin_on_path(tmp_path: Path) -> dict[str, str]:
    """The environment of a pytest that finds the plugin by its entry point: the installed
    one, or else one declared as in pyproject.toml (an editable install made before the
    entry point existed does not list it)."""
    env = dict(os.environ)
    declared = re.search(
        r'^\[project\.entry-points\.pytest11\]\s*^neardup_stream = "([^"]+)"',
        (REPO_ROOT / "pyproject.toml").read_text(),
        re.MULTILINE,
    )
    assert declared is not None, "pyproject.toml declares no pytest11 entry point"
    value = declared.group(1)
    installed = {ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    if value not in installed:
        info = tmp_path / "site" / "neardup_kit_entry_point-0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: neardup-kit-entry-point\n")
        (info / "entry_points.txt").write_text(f"[pytest11]\nneardup_stream = {value}\n")
        paths = [str(tmp_path / "site"), str(REPO_ROOT), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def test_twenty_user_tests_share_one_broker_without_cross_talk(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    name = f"kit{uuid.uuid4().hex[:8]}"
    suite = tmp_path / "users" / f"test_{name}.py"
    suite.parent.mkdir()
    suite.write_text(USER_SUITE.replace("NAME", name))
    example = docs_example()
    (suite.parent / f"test_{name}_docs_example.py").write_text(example)
    expected = 20 + example.count("\ndef test_")
    env = plugin_on_path(tmp_path)
    before = topics_on(kafka_bootstrap)
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)  # the option below must be what is used
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", str(suite.parent), "-q", "-p", "no:cacheprovider"),
            *("--neardup-bootstrap", kafka_bootstrap, "--rootdir", str(suite.parent)),
        ],
        cwd=suite.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    report = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, report
    assert re.search(rf"\b{expected} passed\b", run.stdout), report

    ours = (f"nd-test_{name}", *(f"nd-{t}-" for t in re.findall(r"def (test_\w+)", example)))
    left = sorted(t for t in topics_on(kafka_bootstrap) - before if t.startswith(ours))
    assert left == [], "the fixture's teardown left topics behind"


def topics_on(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()
