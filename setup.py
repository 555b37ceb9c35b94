"""Packaging hook: compile the kernels while the package is built, so it installs warm.

`pip install .` (a wheel) and `pip install -e .` (editable) both run `build_py`; after it,
`python -m neardup_stream.warmup` runs on the built package with numba's in-tree cache
locator, so the compiled kernels land in `neardup_stream/*/__pycache__/` (and the Unicode fold
table in `neardup_stream/_cache/`) and travel with the package: numba keys its cache by the
content of the source file, so the cache is valid wherever the package is installed, for the
same numba, Python and CPU type. A failed warm-up only warns: the first run compiles then.
`NEARDUP_BUILD_WARMUP=0` skips it (the worker image compiles for a generic CPU instead).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

_PRIVATE_CACHES = ("NUMBA_CACHE_DIR", "NEARDUP_CACHE_DIR", "NEARDUP_JIT_CACHE_SEED")


class BuildWarm(build_py):
    """`build_py`, then the warm-up on the built tree (the source tree when editable)."""

    def run(self) -> None:
        super().run()
        if os.environ.get("NEARDUP_BUILD_WARMUP", "1") == "0":
            return
        root = Path(__file__).resolve().parent if self.editable_mode else Path(self.build_lib)
        env = {k: v for k, v in os.environ.items() if k not in _PRIVATE_CACHES}
        # pip's isolated build environment is set up through PYTHONPATH: extend it, keep it.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # numba's cache only, no .pyc files in the wheel
        done = subprocess.run(
            [sys.executable, "-m", "neardup_stream.warmup"], cwd=root, env=env, check=False
        )
        if done.returncode != 0:
            self.warn("neardup-stream: the kernel warm-up failed; the first run compiles them")


setup(cmdclass={"build_py": BuildWarm})
