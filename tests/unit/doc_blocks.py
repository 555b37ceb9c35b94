"""The fenced code blocks of the user docs (README.md, docs/**.md), and how each is checked.

A block's language says what it is: `python` runs, `bash` is commands, `json` is output,
`text` is a diagram or log lines. An HTML comment on the line before a fence says more:

* `<!-- doc-test: broker -->`: Python that needs a broker (run by the integration suite);
* `<!-- doc-test: pytest -->`: a test file for the kit's plugin (`test_kit_plugin.py` runs it);
* `<!-- doc-test: excerpt PATH -->`: lines of the source file PATH, comments aside.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LANGUAGES = {"python", "bash", "json", "text"}
_FENCE = re.compile(
    r"^(?:<!-- doc-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M
)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    mark: str  # "" or what the doc-test comment says
    body: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        fence_at = m.start("lang") - 3
        line = text.count("\n", 0, fence_at) + 1
        found.append(Block(page, line, m["lang"], m["mark"] or "", m["body"]))
    return found


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def commands(body: str) -> list[list[str]]:
    """Each simple command of a bash block as words, comments dropped, `;`/`&&` split; a
    here-document's lines are left out (the block is run whole instead)."""
    out: list[list[str]] = []
    lines = iter(body.splitlines())
    for line in lines:
        here = re.search(r"<<-?'?(\w+)'?", line)
        if here:
            for rest in lines:
                if rest.strip() == here[1]:
                    break
            line = line[: here.start()]
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in words:
            if word in {";", "&&", "||"} or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    current.append(word[:-1])
                if current:
                    out.append(current)
                current = []
            else:
                current.append(word)
        if current:
            out.append(current)
    return out


def environment_prefix(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """`A=1 B=2 cmd args` -> ({A: 1, B: 2}, [cmd, args])."""
    env: dict[str, str] = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        key, _, value = words[0].partition("=")
        env[key] = value
        words = words[1:]
    return env, words
