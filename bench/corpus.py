"""Deterministic evaluation corpus built from real text shipped on a Debian machine.

Sources (all read locally, nothing is downloaded except an optional Debian package):

* ``copyright``: ``/usr/share/doc/*/copyright`` (lots of near-identical licence boilerplate),
* ``man``: English man pages ``/usr/share/man/man[1-8]/*.gz``, troff markup roughly stripped
  (no template family such as the ~16k ``gcloud`` pages may exceed 10% of the bases),
* ``doc``: README/NEWS/changelog/*.txt/*.md files under ``/usr/share/doc`` and info manuals,
* ``license``: ``/usr/share/common-licenses/*``,
* ``man-zh``: Chinese man pages from the Debian package ``manpages-zh``
  (``/usr/share/man/zh_CN`` and ``zh_TW``); installed with apt-get when absent.

Files longer than ``--max-bytes`` (20 KB) are split at paragraph breaks into up to 8 chunks
of 2-20 KB.  Identical base documents (equal after the engine's normalisation) are removed;
near-identical ones are kept, the exact ground truth accounts for them.  Copies are not
re-capped, so an insertion or header mutation may exceed ``--max-bytes`` slightly.

A fraction of the stream consists of mutated copies of earlier documents (and of earlier
copies, forming chains).  Mutations are recorded as ``"<kind>:<level>"``:

* ``char_sub|char_ins|char_del|word_sub|word_ins|word_del`` at level 1, 5, 10, 20, 30
  (percent of characters/words edited),
* ``para_reorder`` at 20, 50, 100 (percent of paragraphs whose position is shuffled),
* ``header_footer`` at 5, 10, 20, 30 (added real text, percent of the original length),
* ``truncate`` at 70, 80, 90, 95 (percent of the characters kept, prefix),
* ``exact:0`` (verbatim copy) and ``format:0`` (case, whitespace and full-width changes that
  the normalisation removes).

Every copy appears after its parent in the stream, usually far after it.  Output is JSONL with
``{"id", "text", "lang", "source", "mutation", "parent"}`` plus a ``.meta.json`` summary.

Usage: ``python -m bench.corpus --out bench/data/corpus.jsonl --docs 20000 --seed 7``
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.textnorm import normalize

DATA_DIR = Path(__file__).resolve().parent / "data"
ZH_PACKAGE = "manpages-zh"
ZH_MAN_DIRS = ("/usr/share/man/zh_CN", "/usr/share/man/zh_TW")
EN_MAN_GLOB = "/usr/share/man/man[1-8]/*"
COPYRIGHT_GLOB = "/usr/share/doc/*/copyright"
LICENSE_DIR = "/usr/share/common-licenses"
DOC_DIR = "/usr/share/doc"
INFO_GLOB = "/usr/share/info/*.info*"

EDIT_KINDS = ("char_sub", "char_ins", "char_del", "word_sub", "word_ins", "word_del")
EDIT_LEVELS = (1, 5, 10, 20, 30)
# (kind, levels, weight): weights are relative frequencies of each mutation kind.
MUTATIONS: tuple[tuple[str, tuple[int, ...], float], ...] = (
    *((kind, EDIT_LEVELS, 0.10) for kind in EDIT_KINDS),
    ("para_reorder", (20, 50, 100), 0.09),
    ("header_footer", (5, 10, 20, 30), 0.09),
    ("truncate", (70, 80, 90, 95), 0.10),
    ("exact", (0,), 0.06),
    ("format", (0,), 0.06),
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RE = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_PARA_SPLIT = re.compile(r"\n[ \t]*\n+")
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


# ---------------------------------------------------------------------------------------------
# troff -> text


_GLYPHS = {
    "em": "\u2014",
    "en": "\u2013",
    "aq": "'",
    "dq": '"',
    "lq": "\u201c",
    "rq": "\u201d",
    "oq": "\u2018",
    "cq": "\u2019",
    "bu": "\u2022",
    "co": "\u00a9",
    "rg": "\u00ae",
    "hy": "-",
    "mi": "-",
    "ti": "~",
    "ha": "^",
    "bv": "|",
    "ga": "`",
    "tm": "\u2122",
    "de": "\u00b0",
    "mu": "\u00d7",
    "di": "\u00f7",
    "+-": "\u00b1",
    "<=": "\u2264",
    ">=": "\u2265",
    "->": "\u2192",
    "<-": "\u2190",
    "sl": "/",
    "rs": "\\",
    "ul": "_",
    "fo": "\u00ab",
    "fc": "\u00bb",
    "Fo": "\u00ab",
    "Fc": "\u00bb",
    "lB": "[",
    "rB": "]",
    "lC": "{",
    "rC": "}",
    "at": "@",
    "sh": "#",
    "Do": "$",
    "ct": "\u00a2",
    "Po": "\u00a3",
}
_ESCAPE_RE = re.compile(
    r"""\\(?:
        [fFgkmMnVYz*]\s?[+-]?(?:\[[^\]]*\]|\(..|.)   # fonts, registers, strings -> drop
      | s[+-]?(?:\[[^\]]*\]|\(\d\d|'\d+'|\d)           # size changes -> drop
      | [hvwlLbxoDHNRSXZ]'[^']*'                       # motions, widths, ... -> drop
      | \((?P<g2>..)                                   # \(xx glyph
      | \[(?P<gl>[^\]]*)\]                             # \[name] glyph
      | (?P<c>.)                                       # any other single-char escape
    )""",
    re.VERBOSE,
)
_SIMPLE_ESC = {
    "-": "-",
    "e": "\\",
    " ": " ",
    "~": " ",
    "0": " ",
    ".": ".",
    "'": "'",
    "`": "`",
    "\\": "\\",
    "t": " ",
    "_": "_",
}
_NO_TEXT_MACROS = frozenset(
    [
        "de",
        "am",
        "ig",
        "nr",
        "ds",
        "as",
        "if",
        "ie",
        "el",
        "ft",
        "in",
        "ti",
        "ta",
        "so",
        "nh",
        "hy",
        "ad",
        "na",
        "ne",
        "fi",
        "nf",
        "ll",
        "pl",
        "rm",
        "tr",
        "cc",
        "c2",
        "ec",
        "eo",
        "RS",
        "RE",
        "TS",
        "TE",
        "EQ",
        "EN",
        "Bl",
        "El",
        "Bd",
        "Ed",
        "Dd",
        "Dt",
        "Os",
        "UC",
        "PD",
        "DT",
        "EX",
        "EE",
        "UR",
        "UE",
        "MT",
        "ME",
        "OP",
        "YS",
        "SY",
        "ll",
        "mso",
        "blm",
        "cu",
        "ps",
        "vs",
        "fam",
        "lf",
        "ns",
        "rs",
        "ev",
        "hw",
        "ch",
        "wh",
        "it",
        "em",
        "tm",
        "ab",
        "mk",
        "rt",
        "ul",
        "IX",
        "Vb",
        "Ve",
    ]
)
_BREAK_MACROS = frozenset(
    ["PP", "P", "LP", "HP", "TP", "sp", "br", "IP", "Pp", "Lp", "It", "SH", "SS", "Sh", "Ss"]
)
_NO_ARG_MACROS = frozenset(["TP", "PP", "HP", "LP", "P", "Sp"])
_ALT_FONT_MACROS = frozenset(["BR", "BI", "IR", "RB", "RI", "IB"])


def _glyph(match: re.Match[str]) -> str:
    if match.group("g2") is not None:
        return _GLYPHS.get(match.group("g2"), "")
    if match.group("gl") is not None:
        name = match.group("gl")
        if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
            return chr(int(name[1:], 16))
        return _GLYPHS.get(name, "")
    if match.group("c") is not None:
        return _SIMPLE_ESC.get(match.group("c"), "")
    return ""


def _macro_args(rest: str) -> list[str]:
    """Split troff macro arguments, honouring double quotes."""
    args = re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)
    return [quoted.replace('""', '"') if quoted else plain for quoted, plain in args]


def troff_to_text(src: str) -> str:
    """Roughly convert man(7)/mdoc(7) troff source to plain text."""
    out: list[str] = []
    skip_until_dots = False
    in_table_format = False
    for raw in src.splitlines():
        line = raw.split('\\"', 1)[0] if '\\"' in raw else raw
        if skip_until_dots:
            if raw.startswith(".."):
                skip_until_dots = False
            continue
        if in_table_format:
            in_table_format = not line.rstrip().endswith(".")
            continue
        if line[:1] in (".", "'"):
            parts = line[1:].strip().split(None, 1)
            if not parts:
                continue
            name, rest = parts[0], (parts[1] if len(parts) > 1 else "")
            if name in ("de", "de1", "am", "ig"):
                skip_until_dots = True
                continue
            if name == "TS":
                in_table_format = True
                continue
            if name in _BREAK_MACROS:
                out.append("")
            if name in _NO_TEXT_MACROS or not name[:1].isupper():
                continue
            args = _macro_args(rest)
            if name == "TH":
                args = args[:2]
            elif name == "IP":
                args = args[:1]
            elif name in _NO_ARG_MACROS:
                args = []
            sep = "" if name in _ALT_FONT_MACROS else " "
            text = sep.join(args)
            if text:
                out.append(_ESCAPE_RE.sub(_glyph, text))
            if name in ("SH", "SS", "Sh", "Ss"):
                out.append("")
            continue
        text = _ESCAPE_RE.sub(_glyph, line.rstrip("\\").replace("\t", " "))
        if text.strip() not in ("T{", "T}"):
            out.append(text.replace("T{", "").replace("T}", ""))
    text = "\n".join(s.rstrip() for s in out)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# ---------------------------------------------------------------------------------------------
# source collection


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


def _read_man(path: str) -> str | None:
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


def _read_plain(path: str) -> str | None:
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
    for para in _PARA_SPLIT.split(text):
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
    return "zh" if nonspace and len(_CJK_RE.findall(text)) >= 0.1 * nonspace else "en"


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
        reader = _read_man if family.startswith("man") else _read_plain
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


# ---------------------------------------------------------------------------------------------
# mutations


class Mutator:
    """Applies the mutation kinds to texts with a seeded RNG and per-language vocabularies."""

    def __init__(self, rng: random.Random, bases: list[Doc]) -> None:
        self.rng = rng
        self.bases_by_lang: dict[str, list[Doc]] = {}
        for doc in bases:
            self.bases_by_lang.setdefault(doc.lang, []).append(doc)
        self.vocab: dict[str, list[str]] = {}
        for lang, docs in self.bases_by_lang.items():
            sample = rng.sample(docs, min(len(docs), 1500))
            words = [w for d in sample for w in _WORD_RE.findall(d.text)]
            self.vocab[lang] = words or ["x"]

    def apply(self, text: str, lang: str, kind: str, level: int) -> str | None:
        """Return the mutated text, or None when ``kind`` does not apply to ``text``."""
        if kind.startswith("char_"):
            return self._char_edit(text, kind[5:], level / 100)
        if kind.startswith("word_"):
            return self._word_edit(text, lang, kind[5:], level / 100)
        return getattr(self, f"_{kind}")(text, lang, level)

    def _char_edit(self, text: str, op: str, rate: float) -> str:
        rng = self.rng
        n = len(text)
        positions = set(rng.sample(range(n), max(1, round(rate * n))))
        chars = list(text)
        for pos in positions:
            if op == "sub":
                chars[pos] = text[rng.randrange(n)]
            elif op == "ins":
                chars[pos] = text[rng.randrange(n)] + chars[pos]
            else:
                chars[pos] = ""
        return "".join(chars)

    def _word_edit(self, text: str, lang: str, op: str, rate: float) -> str | None:
        rng = self.rng
        spans = [m.span() for m in _WORD_RE.finditer(text)]
        if len(spans) < 5:
            return None
        chosen = sorted(rng.sample(range(len(spans)), max(1, round(rate * len(spans)))))
        vocab = self.vocab.get(lang) or self.vocab["en"]
        sep = "" if lang == "zh" else " "
        parts: list[str] = []
        prev = 0
        for idx in chosen:
            start, end = spans[idx]
            parts.append(text[prev:start])
            word = text[start:end]
            if op == "sub":
                parts.append(rng.choice(vocab))
            elif op == "ins":
                parts.append(rng.choice(vocab) + (sep if _CJK_RE.match(word) is None else ""))
                parts.append(word)
            elif end < len(text) and text[end] == " ":
                end += 1
            prev = end
        parts.append(text[prev:])
        return "".join(parts)

    @staticmethod
    def _blocks(text: str) -> tuple[list[str], str]:
        paras = _PARA_SPLIT.split(text)
        if len(paras) >= 3:
            return paras, "\n\n"
        return text.split("\n"), "\n"

    def _para_reorder(self, text: str, lang: str, level: int) -> str | None:
        blocks, joiner = self._blocks(text)
        if len(blocks) < 3:
            return None
        k = max(2, round(level / 100 * len(blocks)))
        idx = sorted(self.rng.sample(range(len(blocks)), k))
        moved = idx[:]
        while moved == idx:
            self.rng.shuffle(moved)
        new = blocks[:]
        for dst, src in zip(idx, moved, strict=True):
            new[dst] = blocks[src]
        return joiner.join(new)

    def _header_footer(self, text: str, lang: str, level: int) -> str:
        rng = self.rng
        total = max(20, round(level / 100 * len(text)))
        donor = rng.choice(self.bases_by_lang[lang]).text
        while len(donor) < total:
            donor += "\n" + rng.choice(self.bases_by_lang[lang]).text
        start = rng.randrange(len(donor) - total + 1)
        extra = donor[start : start + total]
        split = rng.randint(0, total)
        header, footer = extra[:split].strip(), extra[split:].strip()
        return "\n\n".join(p for p in (header, text, footer) if p)

    def _truncate(self, text: str, lang: str, level: int) -> str:
        return text[: max(1, round(level / 100 * len(text)))]

    def _exact(self, text: str, lang: str, level: int) -> str:
        return text

    def _format(self, text: str, lang: str, level: int) -> str:
        """Changes the normalisation undoes: case, whitespace runs, full-width ASCII."""
        rng = self.rng
        whitespace = (" ", "\n", "  ", "\t", " \n ", "\n\n")
        pieces = re.split(r"(\s+)", text)
        out: list[str] = []
        for piece in pieces:
            if not piece:
                continue
            if piece.isspace():
                out.append(rng.choice(whitespace) if rng.random() < 0.3 else piece)
                continue
            roll = rng.random()
            if roll < 0.05:
                piece = piece.upper()
            elif roll < 0.08 and piece.isascii():
                piece = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in piece)
            out.append(piece)
        return "".join(out)


# ---------------------------------------------------------------------------------------------
# corpus assembly


def _group(doc: Doc) -> str:
    """Template family of a document: man page name prefix (``gcloud``, ``git``, ...) or the
    Debian package of a doc file."""
    family, rest = doc.source.split(":", 1)
    if family == "doc":
        return "doc:" + rest.split("/", 1)[0]
    return family + ":" + re.split(r"[_.\-]", rest.split("/")[-1], maxsplit=1)[0]


def choose_bases(
    families: dict[str, list[Doc]], n_base: int, rng: random.Random, zh_frac: float = 0.15
) -> list[Doc]:
    """Pick base documents: licence and copyright files (all of them, or 20% of the bases if
    fewer), Chinese pages up to ``zh_frac`` of the bases, English man pages and
    /usr/share/doc texts for the rest.

    No template family may exceed 10% of the bases (this machine has ~16k near-identical
    ``gcloud`` man pages, which would otherwise dominate)."""
    chosen = list(families["license"]) + list(families["copyright"])
    boiler_cap = round(0.2 * n_base)
    if len(chosen) > boiler_cap:
        chosen = rng.sample(chosen, boiler_cap)
    zh = families["man-zh"]
    chosen += rng.sample(zh, min(len(zh), max(0, round(zh_frac * n_base))))
    cap = max(20, n_base // 10)
    groups: dict[str, list[Doc]] = {}
    for doc in families["man"] + families["doc"]:
        groups.setdefault(_group(doc), []).append(doc)
    english = [d for g in groups.values() for d in (rng.sample(g, cap) if len(g) > cap else g)]
    chosen += rng.sample(english, min(len(english), max(0, n_base - len(chosen))))
    if len(chosen) > n_base:
        chosen = rng.sample(chosen, n_base)
    return chosen


def build_corpus(
    n_docs: int,
    seed: int,
    copy_frac: float,
    chain_frac: float,
    min_bytes: int,
    max_bytes: int,
    install_zh: bool,
) -> tuple[list[dict], dict]:
    """Build the corpus records (stream order) and a metadata summary."""
    rng = random.Random(seed)
    with_zh = ensure_zh_package(install_zh)
    families = collect_sources(min_bytes, max_bytes, with_zh, seed)
    n_base = round(n_docs * (1.0 - copy_frac))
    bases = choose_bases(families, n_base, rng)
    if len(bases) < n_base:
        print(
            f"note: only {len(bases)} distinct base documents available; "
            f"filling the stream with {n_docs - len(bases)} copies",
            file=sys.stderr,
        )
    for doc in bases:
        doc.t = rng.random()
    mutator = Mutator(rng, bases)
    kinds = [m[0] for m in MUTATIONS]
    weights = [m[2] for m in MUTATIONS]
    levels = {m[0]: m[1] for m in MUTATIONS}
    docs: list[Doc] = list(bases)
    copies: list[int] = []
    while len(docs) < n_docs:
        use_chain = copies and rng.random() < chain_frac
        parent_idx = rng.choice(copies) if use_chain else rng.randrange(len(bases))
        parent = docs[parent_idx]
        kind = rng.choices(kinds, weights)[0]
        level = rng.choice(levels[kind])
        text = mutator.apply(parent.text, parent.lang, kind, level)
        if not text or not text.strip():
            continue
        t = parent.t + (1.0 - parent.t) * rng.random() ** 0.5
        docs.append(
            Doc(
                text=text,
                lang=parent.lang,
                source=parent.source,
                mutation=f"{kind}:{level}",
                parent=parent_idx,
                t=t,
            )
        )
        copies.append(len(docs) - 1)
    order = sorted(range(len(docs)), key=lambda i: (docs[i].t, i))
    ids = {old: f"doc{pos:06d}" for pos, old in enumerate(order)}
    records = [
        {
            "id": ids[i],
            "text": docs[i].text,
            "lang": docs[i].lang,
            "source": docs[i].source,
            "mutation": docs[i].mutation,
            "parent": ids[docs[i].parent] if docs[i].parent is not None else None,
        }
        for i in order
    ]
    meta = {
        "docs": len(records),
        "seed": seed,
        "copy_frac": copy_frac,
        "chain_frac": chain_frac,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "zh_package": ZH_PACKAGE if with_zh else None,
        "pool_sizes": {k: len(v) for k, v in families.items()},
    }
    return records, meta


def corpus_stats(records: list[dict]) -> dict:
    """Summary statistics of a corpus (sizes, languages, families, mutation kinds)."""
    sizes = sorted(len(r["text"].encode("utf-8")) for r in records)
    n = len(sizes)
    copy_ids = {r["id"] for r in records if r["mutation"] is not None}

    def pct(p: float) -> int:
        return sizes[min(n - 1, int(p / 100 * n))] if n else 0

    return {
        "docs": n,
        "base_docs": sum(r["mutation"] is None for r in records),
        "copies": sum(r["mutation"] is not None for r in records),
        "chained_copies": sum(r["parent"] in copy_ids for r in records),
        "lang": dict(Counter(r["lang"] for r in records)),
        "family": dict(Counter(r["source"].split(":", 1)[0] for r in records)),
        "mutation_kind": dict(Counter((r["mutation"] or "none").split(":")[0] for r in records)),
        "bytes_total": sum(sizes),
        "bytes_p5_p50_p95_max": [pct(5), pct(50), pct(95), sizes[-1] if n else 0],
        "chars_total": sum(len(r["text"]) for r in records),
    }


def write_jsonl(records: list[dict], path: Path) -> str:
    """Write records as JSONL and return the sha256 of the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            line = json.dumps(rec, ensure_ascii=False) + "\n"
            fh.write(line)
            digest.update(line.encode("utf-8"))
    return digest.hexdigest()


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    """Read the first ``limit`` records (all when None) of a JSONL corpus."""
    records: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(records) >= limit:
                break
            records.append(json.loads(line))
    return records


def meta_path(corpus: Path) -> Path:
    """Sidecar metadata file of a corpus."""
    return corpus.with_suffix(".meta.json")


def write_corpus(
    path: Path,
    n_docs: int,
    seed: int,
    copy_frac: float = 0.35,
    chain_frac: float = 0.15,
    min_bytes: int = 500,
    max_bytes: int = 20000,
    install_zh: bool = True,
) -> dict:
    """Build the corpus, write it and its ``.meta.json`` next to it; return the metadata."""
    t0 = time.perf_counter()
    records, meta = build_corpus(
        n_docs, seed, copy_frac, chain_frac, min_bytes, max_bytes, install_zh
    )
    meta["sha256"] = write_jsonl(records, path)
    meta["stats"] = corpus_stats(records)
    meta["build_seconds"] = round(time.perf_counter() - t0, 2)
    meta_path(path).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


def ensure_corpus(path: Path, n_docs: int, seed: int = 7) -> Path:
    """Build ``path`` (default parameters) unless a corpus of that size and seed is there."""
    mp = meta_path(path)
    if path.exists() and mp.exists():
        meta = json.loads(mp.read_text())
        if meta.get("docs") == n_docs and meta.get("seed") == seed:
            return path
    meta = write_corpus(path, n_docs, seed)
    stats = meta["stats"]
    print(
        f"built {path}: {stats['docs']} docs ({stats['base_docs']} base, {stats['copies']} "
        f"copies), languages {stats['lang']}, {meta['build_seconds']}s",
        file=sys.stderr,
    )
    return path


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DATA_DIR / "corpus.jsonl")
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--copy-frac", type=float, default=0.35, help="fraction of the stream that are copies"
    )
    ap.add_argument(
        "--chain-frac", type=float, default=0.15, help="fraction of copies made from copies"
    )
    ap.add_argument("--min-bytes", type=int, default=500)
    ap.add_argument("--max-bytes", type=int, default=20000)
    ap.add_argument(
        "--no-install", action="store_true", help="never apt-get install the Chinese package"
    )
    args = ap.parse_args(argv)
    meta = write_corpus(
        args.out,
        args.docs,
        args.seed,
        args.copy_frac,
        args.chain_frac,
        args.min_bytes,
        args.max_bytes,
        not args.no_install,
    )
    print(json.dumps(meta, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
