"""The import contract: the engine never imports the Kafka shell, and one import name.

Every module of `neardup_stream` outside `neardup_stream/worker/` is the pure core: read as
source (never imported), none of its import statements may name the worker package, the Kafka
client or the metrics client, at any depth (a function-level import counts). The shell sits on
the core, never the reverse. The repository's top-level `worker/` folder holds the worker's
container image only: no Python file there, so no module is importable under two names from a
checkout.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "neardup_stream"
SHELL = PACKAGE / "worker"
FORBIDDEN = ("neardup_stream.worker", "kafka", "prometheus_client")


def _imported(path: Path) -> set[str]:
    """Every absolute module name an import statement of `path` names, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def _core_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if SHELL not in p.parents)


def _breaks(name: str) -> bool:
    return any(name == f or name.startswith(f"{f}.") for f in FORBIDDEN)


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_never_imports_the_kafka_shell(path: Path) -> None:
    broken = sorted(n for n in _imported(path) if _breaks(n))
    assert not broken, f"{path.relative_to(ROOT)} imports {broken}: the core stays Kafka-free"


def test_the_contract_sees_an_import_it_forbids(tmp_path: Path) -> None:
    """The checker itself: each form of import a core module could use is caught."""
    probe = PACKAGE / "index" / "_probe_for_the_contract.py"
    forms = [
        "import kafka",
        "from kafka.admin import KafkaAdminClient",
        "from neardup_stream.worker import settings",
        "from ..worker.settings import Settings",
        "import prometheus_client",
        "def f():\n    import importlib\n    return importlib.import_module('neardup_stream.worker.main')",
    ]
    try:
        for code in forms:
            probe.write_text(code + "\n")
            assert any(_breaks(n) for n in _imported(probe)), code
        probe.write_text("import numpy\nfrom neardup_stream.config import DedupConfig\n")
        assert not any(_breaks(n) for n in _imported(probe))
    finally:
        probe.unlink(missing_ok=True)


def test_the_shell_is_the_only_place_that_imports_kafka() -> None:
    """Sanity check that the walk reads the shell too: the contract is not vacuous."""
    shell = {n for p in SHELL.rglob("*.py") for n in _imported(p)}
    assert any(n == "kafka" or n.startswith("kafka.") for n in shell)


def test_the_top_level_worker_folder_holds_no_python() -> None:
    assert (ROOT / "worker" / "Dockerfile").is_file()
    assert not list((ROOT / "worker").rglob("*.py")), "a module there is importable as `worker`"
