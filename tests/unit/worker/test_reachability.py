"""Unreachable bootstrap servers: one clear message, then kafka-python's logs throttled."""

from __future__ import annotations

import logging
import socket

import pytest

from neardup_stream.worker.reachability import ThrottleFilter, announce_unreachable, probe


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_probe_tells_refused_unknown_and_open_addresses_apart() -> None:
    refused = probe(f"127.0.0.1:{_closed_port()}", 2.0)
    assert refused is not None and "refused" in refused.reason
    unknown = probe("no-such-host.invalid:9092", 2.0)
    assert unknown is not None and "host name not found" in unknown.reason
    assert probe("no-port-here", 2.0) == ("no-port-here", "not a host:port address")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert probe(f"127.0.0.1:{server.getsockname()[1]}", 2.0) is None


def test_one_warning_names_every_unreachable_address(caplog: pytest.LogCaptureFixture) -> None:
    bad = f"127.0.0.1:{_closed_port()}"
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.reachability"):
        failed = announce_unreachable(f"{bad}, no-such-host.invalid:9092", 2.0)
    assert [u.address for u in failed] == [bad, "no-such-host.invalid:9092"]
    assert len(caplog.records) == 1
    text = caplog.records[0].getMessage()
    assert bad in text and "no-such-host.invalid:9092" in text and "keeps retrying" in text


def test_no_warning_when_one_address_answers(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        good = f"127.0.0.1:{server.getsockname()[1]}"
        with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.reachability"):
            failed = announce_unreachable(f"127.0.0.1:{_closed_port()},{good}", 2.0)
    assert len(failed) == 1 and caplog.records == []


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("kafka.net.manager", logging.ERROR, "f", 1, msg, args, None)


def test_throttle_passes_each_template_once_per_interval_and_counts_the_rest() -> None:
    now = [0.0]
    throttle = ThrottleFilter(60.0, clock=lambda: now[0])
    assert throttle.filter(_record("Connection failed: %s", "refused"))
    assert throttle.filter(_record("Bootstrap %s not ready", "b0"))  # another template
    for second in range(1, 6):
        now[0] = float(second)
        assert not throttle.filter(_record("Connection failed: %s", f"refused {second}"))
    now[0] = 61.0
    passed = _record("Connection failed: %s", "refused")
    assert throttle.filter(passed)
    assert (
        passed.getMessage()
        == "Connection failed: refused (and 5 like it held back since the last one)"
    )
    now[0] = 62.0
    assert not throttle.filter(_record("Connection failed: %s", "refused"))


def test_messages_kafka_python_formats_itself_are_one_kind_whatever_their_numbers() -> None:
    """`Bootstrap attempt to bootstrap-0 failed: ... (backoff 0.93 secs)` is an f-string in
    kafka-python 3: a new backoff each time must not let every attempt through."""
    now = [0.0]
    throttle = ThrottleFilter(60.0, clock=lambda: now[0])
    passed = 0
    for attempt in range(50):
        now[0] = attempt * 2.0
        msg = f"Bootstrap attempt to bootstrap-0 failed: [Errno 111] (backoff {attempt * 0.37:.2f} secs)"
        passed += throttle.filter(_record(msg))
    assert passed == 2  # at 0 s and once the interval passed (at 60 s)
