"""The suite's split: `make test-main` runs everything not marked `faults`, `make test-faults`
the fault-injection modules (tests/integration/test_faults_*.py and test_resilience.py, all
marked), and `make test` (the README's command, what CI runs) both."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_marks(path: Path) -> set[str]:
    """Names of the `pytest.mark.X` in a module's `pytestmark`."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return {
                n.attr
                for n in ast.walk(node.value)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Attribute)
                and n.value.attr == "mark"
            }
    return set()


def test_every_fault_injection_module_is_marked_faults() -> None:
    here = ROOT / "tests" / "integration"
    modules = [*sorted(here.glob("test_faults_*.py")), here / "test_resilience.py"]
    assert len(modules) >= 8
    unmarked = [m.name for m in modules if module_marks(m) != {"integration", "faults"}]
    assert not unmarked, f"not marked integration + faults: {unmarked}"


def test_make_test_and_test_faults_split_the_suite_and_ci_runs_both() -> None:
    makefile = (ROOT / "Makefile").read_text()

    def recipe(target: str) -> str:
        match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert match, f"no target {target}"
        return match.group(1)

    assert '-m "not faults"' in recipe("test-main")
    assert "-m faults" in recipe("test-faults")
    both = recipe("test")
    assert "-o install test-faults TEST_KAFKA_PORT=$(FAULTS_KAFKA_PORT)" in both  # own broker
    assert "-o install test-main ||" in both
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "make lint" in ci and "make test" in ci
    assert "make test" in (ROOT / "README.md").read_text()
    configured = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"faults: ', configured), "the faults marker is not registered"
