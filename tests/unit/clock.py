"""A clock a test moves by hand, in place of a module's `time.monotonic`."""

from __future__ import annotations

from types import ModuleType

import pytest


class Clock:
    """Callable like `time.monotonic`; `now` moves only when a test moves it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def frozen(monkeypatch: pytest.MonkeyPatch, module: ModuleType, now: float = 1000.0) -> Clock:
    """`module.time.monotonic` replaced by a `Clock` starting at `now`."""
    clock = Clock(now)
    monkeypatch.setattr(module.time, "monotonic", clock)
    return clock
