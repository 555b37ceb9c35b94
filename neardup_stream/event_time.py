"""Event time: the time a document is filed under, for retention by age and the watermark.

Clocks lie: a producer stamped in the year 2100 must not move the watermark past every live
document and evict them all, and a document from 1970 must not disturb anyone else. The rule:

* `real` is the wall clock (or the caller's `now`);
* a document's reference time is its record time (e.g. the Kafka record timestamp, seconds)
  when one is given and >= 0 (Kafka's -1 means none), else `real`; the reference is clamped
  to at most `real + skew`;
* its own `timestamp`, if it has one, is clamped to at most `reference + skew` and to at most
  `real + skew`; without one it is filed under the reference.

So the watermark (the latest time filed) never passes `real + skew`. Far-past times are kept
as they are: they never move the watermark back (it only grows), and a document that is
already older than the age window when it arrives is decided but not indexed, so it cannot be
anyone's match and evicts nothing. The clamped time is what the changelog records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

MAX_TS = 2**32 - 1  # times are stored as unsigned 32-bit seconds


def event_times(
    stamps: Sequence[datetime | None],
    real: float,
    skew: float,
    times: Sequence[float | None] | None = None,
) -> np.ndarray:
    """int64 seconds each document is filed under (see the module docstring), given each
    one's own `timestamp` (None for none)."""
    if times is not None and len(times) != len(stamps):
        raise ValueError(f"{len(times)} record times for {len(stamps)} documents")
    limit = real + skew
    out = np.empty(len(stamps), dtype=np.float64)
    for i, stamp in enumerate(stamps):
        t = None if times is None else times[i]
        ref = min(t if t is not None and t >= 0 else real, limit)
        own = stamp.timestamp() if stamp is not None else ref
        out[i] = min(own, ref + skew, limit)
    return np.clip(out, 0, MAX_TS).astype(np.int64)
