"""Where the evaluation corpus's base documents come from: text files on a Debian machine.

Owns file discovery and reading (`collect_sources`): licence texts, `copyright` files, English
man pages (converted by `bench.troff`), README/NEWS/changelog/info files under
`/usr/share/doc`, and Chinese man pages from the Debian package `manpages-zh` (installed with
apt-get when absent and allowed). Long files are split at paragraph breaks into chunks
(`split_chunks`); documents identical after the engine's normalisation are kept once; a
document's language is `zh` or `en` (`detect_lang`). Nothing is downloaded except that package.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from bench.textnorm import normalize
from bench.troff import troff_to_text

ZH_PACKAGE = "manpages-zh"
ZH_MAN_DIRS = ("/usr/share/man/zh_CN", "/usr/share/man/zh_TW")
EN_MAN_GLOB = "/usr/share/man/man[1-8]/*"
COPYRIGHT_GLOB = "/usr/share/doc/*/copyright"
LICENSE_DIR = "/usr/share/common-licenses"
DOC_DIR = "/usr/share/doc"
INFO_GLOB = "/usr/share/info/*.info*"

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RE = re.compile(f"[{_CJK}]")
WORD_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
PARA_SPLIT = re.compile(r"\n[ \t]*\n+")
_DOC_NAME_RE = re.compile(
    r"^(changelog|NEWS|README|TODO|AUTHORS|THANKS|HISTORY|CHANGES)|\.(txt|md|rst)(\.gz)?$",
    re.IGNORECASE,
)


@dataclass
class Doc:
    """One corpus document before ids are assigned."""

    text: str
    lang: str
    source: str
    mutation: str | None = None
    parent: int | None = None  # index into the document list
    t: float = 0.0  # stream position key


def ensure_zh_package(allow_install: bool) -> bool:
    """Make sure the Chinese man pages are present; install ``manpages-zh`` if possible."""
    if _zh_files():
        return True
    if not allow_install or shutil.which("apt-get") is None:
        print(
            f"warning: {ZH_PACKAGE} is not installed; corpus will have no Chinese text",
            file=sys.stderr,
        )
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", ZH_PACKAGE]
    print(f"installing Debian package {ZH_PACKAGE} for Chinese text ...", file=sys.stderr)
    for attempt in range(2):
        if attempt == 1:
            subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=False)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode == 0 and _zh_files():
            return True
    print(
        f"warning: could not install {ZH_PACKAGE}; corpus will have no Chinese text",
        file=sys.stderr,
    )
    return False


def _zh_files() -> list[str]:
    files: list[str] = []
    for root in ZH_MAN_DIRS:
        files.extend(glob.glob(f"{root}/man[1-8]/*"))
    return sorted(files)


def read_man(path: str) -> str | None:
    if os.path.islink(path):
        return None
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError):
        return None
    if data.lstrip().startswith(b".so "):
        return None
    return troff_to_text(data.decode("utf-8", errors="replace"))


def read_plain(path: str) -> str | None:
    if os.path.islink(path):
        return None
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as fh:
            data = fh.read(4 * 1024 * 1024)
    except (OSError, EOFError):
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def _cap(text: str, max_bytes: int) -> str:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes, at a line break when possible."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", errors="ignore")
    nl = cut.rfind("\n", len(cut) // 2)
    return (cut[:nl] if nl > 0 else cut).rstrip()


def split_chunks(text: str, rng: random.Random, max_bytes: int, max_chunks: int) -> list[str]:
    """Split a long text at paragraph breaks into up to ``max_chunks`` pieces of 2 KB up to
    ``max_bytes`` (log-uniform target sizes); a text that fits in ``max_bytes`` stays whole."""
    if len(text.encode("utf-8")) <= max_bytes:
        return [text]
    low = min(2000, max_bytes)
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    target = low * (max_bytes / low) ** rng.random()
    for para in PARA_SPLIT.split(text):
        para_size = len(para.encode("utf-8")) + 2
        if current and size + para_size > target:
            chunks.append("\n\n".join(current))
            if len(chunks) == max_chunks:
                return chunks
            current, size = [], 0
            target = low * (max_bytes / low) ** rng.random()
        current.append(_cap(para, max_bytes))
        size += para_size
    if current:
        chunks.append("\n\n".join(current))
    return chunks[:max_chunks]


def detect_lang(text: str) -> str:
    """``zh`` when at least 10% of the non-space characters are CJK ideographs, else ``en``."""
    nonspace = len(text) - sum(ch.isspace() for ch in text)
    return "zh" if nonspace and len(CJK_RE.findall(text)) >= 0.1 * nonspace else "en"


def _doc_files() -> list[str]:
    files = []
    for root, _dirs, names in os.walk(DOC_DIR):
        for name in names:
            if name != "copyright" and _DOC_NAME_RE.search(name):
                files.append(os.path.join(root, name))
    return sorted(files)


def _source_files(with_zh: bool) -> dict[str, list[tuple[str, str]]]:
    """``family -> [(source label, path)]`` for every candidate file on this machine."""
    return {
        "license": [
            (f"license:{os.path.basename(p)}", p)
            for p in sorted(glob.glob(f"{LICENSE_DIR}/*"))
            if os.path.isfile(p)
        ],
        "copyright": [
            (f"copyright:{p.split('/')[-2]}", p) for p in sorted(glob.glob(COPYRIGHT_GLOB))
        ],
        "man": [(f"man:{'/'.join(p.split('/')[-2:])}", p) for p in sorted(glob.glob(EN_MAN_GLOB))],
        "doc": [(f"doc:{os.path.relpath(p, DOC_DIR)}", p) for p in _doc_files()]
        + [
            (f"doc:info/{os.path.basename(p)}", p)
            for p in sorted(glob.glob(INFO_GLOB))
            if not os.path.islink(p)
        ],
        "man-zh": (
            [(f"man-zh:{'/'.join(p.split('/')[-3:])}", p) for p in _zh_files()] if with_zh else []
        ),
    }


def collect_sources(
    min_bytes: int, max_bytes: int, with_zh: bool, seed: int, max_chunks: int = 8
) -> dict[str, list[Doc]]:
    """Read every candidate base document, grouped by source family.

    Long files are split into up to ``max_chunks`` chunks; documents identical after the
    engine's normalisation are kept once (first in sorted path order)."""
    seen: set[str] = set()
    out: dict[str, list[Doc]] = {}
    for family, items in _source_files(with_zh).items():
        reader = read_man if family.startswith("man") else read_plain
        docs: list[Doc] = []
        for source, path in items:
            text = reader(path)
            if not text:
                continue
            text = text.replace("\r\n", "\n").replace("\ufffd", "").replace("\x1f", "").strip()
            chunks = split_chunks(text, random.Random(f"{seed}:{source}"), max_bytes, max_chunks)
            for k, chunk in enumerate(chunks):
                chunk = chunk.strip()
                if len(chunk.encode("utf-8")) < min_bytes:
                    continue
                key = hashlib.sha1(normalize(chunk).encode("utf-8")).hexdigest()
                if key in seen:
                    continue
                seen.add(key)
                lang = detect_lang(chunk)
                if (family == "man-zh") != (lang == "zh"):
                    continue
                label = source if len(chunks) == 1 else f"{source}#{k}"
                docs.append(Doc(text=chunk, lang=lang, source=label))
        out[family] = docs
    return out
