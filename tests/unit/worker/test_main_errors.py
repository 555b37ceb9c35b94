"""`neardup-stream worker`: settings errors name the setting and its source; --version."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from neardup_stream import __version__
from neardup_stream.worker.loop import Worker
from neardup_stream.worker.main import main
from neardup_stream.worker.security_errors import EXIT_CONFIG
from neardup_stream.worker.topics import TopicsUnusable


def test_a_bad_flag_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEARDUP_WORKER__MAX_BATCH", "10")
    assert main(["--partitions", "0", "--metrics-port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "topics.partitions (flag --partitions)" in err
    assert "metrics.port (flag --metrics-port)" in err and "an integer from 0 to 65535" in err


def test_a_bad_variable_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEARDUP_WORKER__MAX_BACTH", "10")
    monkeypatch.setenv("NEARDUP_WORKER_SCOPE", "partition")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "did you mean NEARDUP_WORKER__MAX_BATCH?" in err
    assert "NEARDUP_WORKER_SCOPE: matches no setting" in err
    assert "did you mean NEARDUP_WORKER__SCOPE?" in err


def test_the_0_2_per_partition_switch_is_refused_naming_the_scope(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEARDUP_CLUSTER__ENABLED", "false")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "cluster.enabled = 'false' was removed in 0.3" in err
    assert "--scope partition" in err and "docs/operations/upgrading.md" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"neardup-stream {__version__}"


@pytest.fixture
def logging_kept() -> Iterator[None]:
    """`main` configures logging for the process (levels, the kafka loggers' throttling
    filters); put back what it changed, so later tests see logging as before."""
    loggers = [logging.getLogger()] + [
        logging.getLogger(n) for n in list(logging.Logger.manager.loggerDict)
    ]
    kept = [(lg, lg.level, list(lg.filters), list(lg.handlers)) for lg in loggers]
    yield
    for lg, level, filters, handlers in kept:
        lg.setLevel(level)
        lg.filters[:], lg.handlers[:] = filters, handlers
    for name in set(logging.Logger.manager.loggerDict) - {lg.name for lg in loggers}:
        made = logging.getLogger(name)  # made by main: as a new logger is
        made.setLevel(logging.NOTSET)
        made.filters[:], made.handlers[:] = [], []


@pytest.mark.usefixtures("logging_kept")
def test_a_metrics_port_in_use_is_refused_saying_what_to_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a second worker started on one host with the defaults: no traceback, exit 78
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["--metrics-host", "127.0.0.1", "--metrics-port", str(port)])
    assert code == EXIT_CONFIG
    err = caplog.text
    assert f"metrics.port={port}: cannot listen on 127.0.0.1 (Address already in use)" in err
    assert "--metrics-port" in err and "--instance-id" in err and "Traceback" not in err


@pytest.mark.usefixtures("logging_kept")
def test_unusable_topics_end_start_up_in_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # e.g. a missing input with topic creation off, or a group id no topic can be named after
    def unusable(_worker: object) -> None:
        raise TopicsUnusable("topic 'docs' does not exist and topic creation is off")

    monkeypatch.setattr(Worker, "run", unusable)
    assert main(["--scope", "partition", "--metrics-port", "0"]) == EXIT_CONFIG
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.getMessage() for r in errors] == [
        "topic 'docs' does not exist and topic creation is off"
    ]
    assert errors[0].exc_info is None  # no traceback


def test_a_flag_and_a_variable_are_checked_together(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    """A snapshot directory from the environment works with `--scope partition` given as a
    flag: the settings are validated once, flags on the environment (before, the
    environment alone was validated first and refused what the flag allows)."""
    from neardup_stream.worker.main import build_parser, settings_from_args

    monkeypatch.setenv("NEARDUP_WORKER__SNAPSHOT_DIR", str(tmp_path))
    settings = settings_from_args(build_parser().parse_args(["--scope", "partition"]))
    assert settings.worker.scope == "partition" and str(settings.worker.snapshot_dir) == str(
        tmp_path
    )
    assert main([]) == 2  # without the flag: topic scope, which keeps no local snapshot
    assert "worker.snapshot_dir" in capsys.readouterr().err
