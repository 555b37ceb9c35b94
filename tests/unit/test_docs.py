"""The documentation a new user reads (its code blocks: `test_doc_blocks.py`): every relative
link resolves, `docs/settings.md` is current, and the README keeps CI's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit import doc_blocks

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def python_blocks(page: Path) -> list[str]:
    return [b.body for b in doc_blocks.blocks(page) if b.lang == "python"]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_has_python_to_run() -> None:
    assert python_blocks(README)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = FENCE.sub("", page.read_text())
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name}: no heading for #{anchor}"


def test_the_readme_keeps_ci_test_command_and_a_table_of_contents() -> None:
    text = README.read_text()
    assert "make test" in text
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"\]\(#([^)]+)\)", contents)
    headings = [slug(h) for h in re.findall(r"^## (.+)$", FENCE.sub("", text), re.M)]
    assert listed == [h for h in headings if h != "contents"]


def test_settings_reference_is_current() -> None:
    from tools.settings_reference import OUT, render

    assert OUT.read_text() == render(), "run: python -m tools.settings_reference"


def test_settings_reference_names_every_setting_and_flag() -> None:
    from neardup_stream.settings_fields import known_variables
    from neardup_stream.worker.main import build_parser
    from neardup_stream.worker.settings import Settings
    from tools.settings_reference import render

    text = render()
    for name, path in known_variables(Settings).items():
        if len(path) == 2 or path == ("log_level",):
            assert f"`{name}`" in text
    for action in build_parser()._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in {"--help", "--version"}:
                assert f"`{flag}`" in text, flag


def test_metrics_page_lists_exactly_the_exported_metrics() -> None:
    from prometheus_client import CollectorRegistry

    from neardup_stream.worker.metrics import build_metrics

    registry = CollectorRegistry()
    build_metrics(registry)
    exported = {f.name + ("_total" if f.type == "counter" else "") for f in registry.collect()}
    page = (ROOT / "docs" / "metrics.md").read_text()
    documented = set(re.findall(r"`(neardup_[a-z_]+)", page))
    assert exported - documented == set(), "exported but not in docs/metrics.md"
    assert documented - exported == set(), "in docs/metrics.md but not exported"
