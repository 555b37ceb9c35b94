"""The distribution as a user installs it: one import name, and a user's own `worker` package
living beside the testing kit.

A wheel is built from this checkout (without the kernel warm-up, `NEARDUP_BUILD_WARMUP=0`:
the first use compiles them instead, which is not what this checks) and installed with its
`worker` extra and pytest into a fresh virtual environment, as `pip install` does for a user.
Then a project of the user's own, with a `worker` package of its own (`worker/settings.py`
included, a name the kit once shadowed), a conftest that configures the kit, and tests that
use `neardup_driver` and `neardup_worker`, runs with plain `pytest` and with `python -m pytest`
against the real broker: the user's tests and the kit's must all pass, without a warning.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

USER_PACKAGE = {
    "worker/__init__.py": "from worker.enrich import enrich\n",
    "worker/enrich.py": ("def enrich(doc):\n    return {**doc, 'text': doc['text'].strip()}\n"),
    "worker/settings.py": "TOPIC = 'crawl'\n",
    "conftest.py": """
        import pytest

        from neardup_stream.worker.settings import Settings


        @pytest.fixture
        def neardup_settings():
            return Settings().with_overrides({"dedup": {"threshold": 0.8}})
        """,
    "tests/test_pipeline.py": """
        import json

        from worker import enrich
        from worker.settings import TOPIC

        STORY = "Storm knocks out power across the region; crews expect repairs in two days."


        def test_the_users_own_worker_package():
            assert enrich({"id": "a", "text": "  x "}) == {"id": "a", "text": "x"}
            assert TOPIC == "crawl"


        def test_the_driver_flags_the_copy(neardup_driver):
            driver = neardup_driver()
            assert driver.settings.dedup.threshold == 0.8  # the conftest's settings
            driver.send(json.dumps(enrich({"id": "a", "text": STORY})).encode(), key=b"a")
            [copy] = driver.send(json.dumps({"id": "b", "text": STORY}).encode(), key=b"b")
            assert json.loads(copy.value)["duplicate_of"] == "a"


        def test_a_real_worker_decides(neardup_worker):
            neardup_worker.send_documents([{"id": "a", "text": STORY}, {"id": "b", "text": STORY}])
            neardup_worker.send(b"{not json", key=b"broken")
            kinds = {o.id: o.kind for o in neardup_worker.wait_for(3, timeout=120)}
            assert kinds == {"a": "unique", "b": "duplicate", "broken": "dead_letter"}
        """,
}


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-6000:]}"
    return out


def _clean_env(tmp: Path) -> dict[str, str]:
    """The user's environment: none of this checkout's settings, paths or caches."""
    drop = ("NEARDUP_", "PYTHON", "VIRTUAL_ENV", "NUMBA_", "PYTEST_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PIP_CACHE_DIR"] = str(tmp / "pip-cache")
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = {**_clean_env(out), "NEARDUP_BUILD_WARMUP": "0"}
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        cwd=out, env=env, timeout=600,
    )  # fmt: skip
    [built] = out.glob("neardup_stream-*.whl")
    return built


def test_the_wheel_installs_one_import_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        [info] = {n.split("/")[0] for n in names if ".dist-info/" in n}
        top_level = z.read(f"{info}/top_level.txt").decode().split()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert top_level == ["neardup_stream"]
    assert {n.split("/")[0] for n in names} == {"neardup_stream", info}
    assert "neardup_stream/worker/testing/plugin.py" in names
    targets = [line.split("=", 1)[1].strip() for line in entry_points.splitlines() if "=" in line]
    assert targets and all(t.startswith("neardup_stream.") for t in targets), entry_points


def test_a_user_project_with_its_own_worker_package_runs_its_tests_and_the_kits(
    wheel: Path, tmp_path: Path, kafka_bootstrap: str
) -> None:
    env = _clean_env(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env, timeout=300)
    python, pytest_bin = venv / "bin" / "python", venv / "bin" / "pytest"
    _run(
        [str(python), "-m", "pip", "install", "-q", f"{wheel}[worker]", "pytest"],
        cwd=tmp_path, env=env, timeout=900,
    )  # fmt: skip
    project = tmp_path / "project"
    for rel, text in USER_PACKAGE.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(textwrap.dedent(text).lstrip())
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    ready = ("--neardup-ready-timeout", "300")  # the first start compiles the kernels
    runs = {
        "pytest": [str(pytest_bin), "-p", "no:cacheprovider", "--neardup-bootstrap",
                   kafka_bootstrap, *ready],
        "python -m pytest": [str(python), "-m", "pytest", "-p", "no:cacheprovider", *ready],
    }  # fmt: skip
    for how, cmd in runs.items():
        out = _run(cmd, cwd=project, env={**env, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
                   timeout=900)  # fmt: skip
        summary = out.strip().splitlines()[-1]
        assert "3 passed" in summary, f"{how}:\n{out[-4000:]}"
        assert "warning" not in summary, f"{how} put warnings in the user's run:\n{out[-4000:]}"
