"""Snapshots: save a Deduplicator to a directory atomically, and load it back.

Layout: `<dir>/meta.json` (format version, full config, fingerprint id, window) and
`<dir>/state.npz` (`Deduplicator.state()`: store columns, id registry, index entries,
precise-mode shingle sets).
The directory is written under a temporary name, fsynced, then renamed into place, so a crash
leaves either the old snapshot or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from neardup_stream.config import FINGERPRINT_FORMAT, DedupConfig
from neardup_stream.deduplicator import Deduplicator

FORMAT_VERSION = 3  # 3: per-document update and superseded flags
READS = (2, 3)  # a version 2 snapshot holds no updates: its flags are read as all False


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_snapshot(
    dedup: Deduplicator, path: str | os.PathLike[str], extra: dict[str, object] | None = None
) -> Path:
    """Write `dedup`'s full state to directory `path`, replacing it atomically.

    Args:
        dedup: The index to save.
        path: Target directory.
        extra: JSON-serialisable facts stored in meta.json beside the state (e.g. the
            changelog offsets the snapshot covers).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    arrays = dedup.state()
    with open(tmp / "state.npz", "wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]
        fh.flush()
        os.fsync(fh.fileno())
    meta = {
        "format_version": FORMAT_VERSION,
        "fingerprint_id": dedup.config.fingerprint_id,
        "fingerprint_format": FINGERPRINT_FORMAT,
        "config": dedup.config.model_dump(),
        "watermark": dedup.watermark,
        "documents": len(dedup),
        **(extra or {}),
    }
    with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    _fsync_dir(target.parent)
    shutil.rmtree(old, ignore_errors=True)
    return target


def read_meta(path: str | os.PathLike[str]) -> dict[str, object]:
    """The metadata of a snapshot directory."""
    with open(Path(path) / "meta.json", encoding="utf-8") as fh:
        meta: dict[str, object] = json.load(fh)
    if meta.get("format_version") not in READS:
        raise ValueError(
            f"snapshot format {meta.get('format_version')!r} is not one this engine reads "
            f"({', '.join(map(str, READS))}); rebuild the index (e.g. from the changelog)"
        )
    return meta


def other_format(meta: dict[str, object]) -> object | None:
    """The fingerprint format a snapshot's `meta` names when it is not this release's (a
    snapshot written before formats were named is format 1); None when it is."""
    made = meta.get("fingerprint_format", 1)
    return None if made == FINGERPRINT_FORMAT else made


def load_snapshot(path: str | os.PathLike[str], config: DedupConfig | None = None) -> Deduplicator:
    """Restore a Deduplicator saved by `save_snapshot`.

    Args:
        path: Snapshot directory.
        config: Settings to run with; defaults to the stored ones. Its fingerprint settings
            must match the snapshot's (retention, shards and caps may differ).
    """
    meta = read_meta(path)
    made = other_format(meta)
    if made is not None:
        raise ValueError(
            f"snapshot holds fingerprints of format {made}, this release uses format "
            f"{FINGERPRINT_FORMAT}; rebuild the index from the input instead"
        )
    stored = DedupConfig.model_validate(meta["config"])
    config = config or stored
    if config.fingerprint_id != meta["fingerprint_id"]:
        raise ValueError(
            "snapshot fingerprint settings differ from the requested config: "
            f"{stored.fingerprint_fields()} vs {config.fingerprint_fields()}"
        )
    with np.load(Path(path) / "state.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    return Deduplicator.from_state(config, arrays)
