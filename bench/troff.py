"""A rough troff (man(7) / mdoc(7)) to plain-text converter, for the evaluation corpora.

Owns what man page markup becomes: macros that carry text keep it (fonts alternated without
spaces, `TH`/`IP` arguments cut), macros without text and macro definitions are dropped,
breaking macros become paragraph breaks, glyph escapes become their
characters, other escapes (fonts, sizes, motions) nothing, and table formats are skipped. Good enough for
near-duplicate evaluation, not for reading: it is no full troff implementation.
"""

from __future__ import annotations

import re

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
