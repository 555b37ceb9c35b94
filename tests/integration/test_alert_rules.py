"""The alert rules, checked and unit-tested by Prometheus' own `promtool`.

`promtool check rules` parses deploy/prometheus/alerts.yml (and the Prometheus Operator copy
in deploy/k8s) as Prometheus would load them; `promtool test rules` evaluates every alert
against the input series of deploy/prometheus/alerts.test.yml. The `promtool` fixture comes
from Debian's prometheus package: it fails in CI when missing, and skips elsewhere.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.integration.prometheus import ALERTS_FILE

pytestmark = pytest.mark.integration

RULES_DIR = ALERTS_FILE.parent
RULE_TESTS = RULES_DIR / "alerts.test.yml"
K8S_RULE = RULES_DIR.parents[1] / "deploy" / "k8s" / "prometheusrule.yaml"


def run(promtool: str, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def test_promtool_checks_the_alert_rules(promtool: str, tmp_path: Path) -> None:
    out = run(promtool, "check", "rules", ALERTS_FILE.name, cwd=RULES_DIR)
    rules = sum(len(g["rules"]) for g in yaml.safe_load(ALERTS_FILE.read_text())["groups"])
    assert f"SUCCESS: {rules} rules found" in out, out
    # The Operator's PrometheusRule carries the same groups; Prometheus must load them too.
    spec = yaml.safe_load(K8S_RULE.read_text())["spec"]
    (tmp_path / "k8s-rules.yml").write_text(yaml.safe_dump(spec))
    run(promtool, "check", "rules", "k8s-rules.yml", cwd=tmp_path)


def test_promtool_unit_tests_of_the_alert_rules_pass(promtool: str) -> None:
    out = run(promtool, "test", "rules", RULE_TESTS.name, cwd=RULES_DIR)
    assert "SUCCESS" in out, out


def test_promtool_unit_tests_catch_a_changed_threshold(promtool: str, tmp_path: Path) -> None:
    """The rule tests are not vacuous: a rule file with one threshold moved fails them."""
    text = ALERTS_FILE.read_text()
    assert text.count("neardup_restore_seconds > 60") == 1
    (tmp_path / ALERTS_FILE.name).write_text(
        text.replace("neardup_restore_seconds > 60", "neardup_restore_seconds > 90")
    )
    (tmp_path / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
    done = subprocess.run(
        [promtool, "test", "rules", RULE_TESTS.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    assert "NeardupRestoreTooSlow" in done.stdout + done.stderr
