"""A testing kit for pipelines that include neardup-stream (see docs/testing.md).

* `Driver`: broker-free, feeds Kafka-shaped input through the worker's own decide step and
  returns exactly the records the worker would publish (`neardup_stream.worker.testing.driver`);
* `neardup_stream.worker.embedded.EmbeddedWorker`: a real worker in a thread of the test process;
* the pytest plugin (`neardup_stream.worker.testing.plugin`, registered as a `pytest11` entry point):
  `neardup_driver`, and `neardup_worker` against the broker of the user's session.

Importing this package never imports the Kafka client; only the broker fixtures do. Its
names load on first use, so pytest loading the plugin in every session costs nothing until
a fixture is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neardup_stream.worker.testing.driver import (
        DEFAULT_START_MS,
        Driver,
        InputMessage,
        OutputRecord,
    )

__all__ = ["DEFAULT_START_MS", "Driver", "InputMessage", "OutputRecord"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("neardup_stream.worker.testing.driver"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
