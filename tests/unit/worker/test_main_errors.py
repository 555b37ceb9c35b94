"""`neardup-stream worker`: settings errors name the setting and its source; --version."""

from __future__ import annotations

import pytest

from neardup_stream import __version__
from worker.main import main


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
    monkeypatch.setenv("NEARDUP_CLUSTER_ENABLED", "true")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "did you mean NEARDUP_WORKER__MAX_BATCH?" in err
    assert "NEARDUP_CLUSTER_ENABLED: matches no setting" in err
    assert "did you mean NEARDUP_CLUSTER__ENABLED?" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"neardup-stream {__version__}"
