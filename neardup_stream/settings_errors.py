"""Settings errors a person can act on, shared by `dedup`, `compare` and the worker.

A pydantic `ValidationError` names a location (`('dedup', 'shingle_size')`) and a message.
This module turns it into: the setting, where its value came from (a flag, an environment
variable, or the default), what is accepted, and for an unknown name the nearest known one.
It also finds `NEARDUP_*` variables that match no setting at all (pydantic-settings ignores
them silently, e.g. `NEARDUP_DEDUP_THRESHOLD` with one underscore), so the caller refuses
them as it refuses a misspelt field.

Names and accepted values come from `settings_fields`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from neardup_stream.settings_fields import (
    OTHER_VARIABLES,
    PREFIX,
    accepted,
    env_name,
    field_info,
    known_variables,
    submodel,
)


@dataclass(frozen=True)
class SettingsProblem:
    """One invalid or unknown setting, in words a user can act on."""

    setting: str  # dotted path, e.g. "dedup.shingle_size"
    source: str  # "flag --shingle-size", "environment variable NEARDUP_...", "default"
    problem: str
    accepted: str | None = None
    suggestion: str | None = None

    def __str__(self) -> str:
        where = self.source if self.setting in self.source else f"{self.setting} ({self.source})"
        text = f"{where}: {self.problem}"
        if self.accepted:
            text += f"; accepted: {self.accepted}"
        if self.suggestion:
            text += f"; did you mean {self.suggestion}?"
        return text


def _env_lookup(environ: Mapping[str, str]) -> dict[str, str]:
    return {key.upper(): key for key in environ if key.upper().startswith(PREFIX)}


def source_of(path: tuple[str, ...], flags: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """Where the value at `path` came from: a flag beats the environment, which beats the
    default (flags override the environment, as the commands apply them)."""
    if ".".join(path) in flags:
        return f"flag {flags['.'.join(path)]}"
    env = _env_lookup(environ)
    for depth in range(len(path), 0, -1):
        name = env_name(path[:depth])
        if name in env:
            return f"environment variable {env[name]}"
    return "default"


def _strip(message: str) -> str:
    return re.sub(r"^(Value error|Assertion failed), ", "", message)


def problems(
    exc: ValidationError,
    model: type[BaseModel],
    flags: Mapping[str, str],
    environ: Mapping[str, str],
) -> list[SettingsProblem]:
    """One `SettingsProblem` per error in `exc` (validating `model`)."""
    found = []
    for error in exc.errors():
        path = tuple(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            found.append(_unknown(model, path, flags, environ))
            continue
        info = field_info(model, path)
        sub = submodel(info.annotation) if info is not None else model if not path else None
        if sub is not None:  # a check across fields: name the fields its message mentions
            found.extend(_across(sub, path, _strip(error["msg"]), flags, environ))
            continue
        found.append(
            SettingsProblem(
                ".".join(path),
                source_of(path, flags, environ),
                f"{_strip(error['msg'])} (got {error.get('input')!r})",
                accepted(model, path),
            )
        )
    return found


def _across(
    sub: type[BaseModel],
    path: tuple[str, ...],
    message: str,
    flags: Mapping[str, str],
    environ: Mapping[str, str],
) -> Iterator[SettingsProblem]:
    paths = _named_paths(sub, message)
    paths = [(*path, *p) for p in paths] or [path]
    sources = [source_of(p, flags, environ) for p in paths]
    pairs = list(zip(paths, sources, strict=True))
    given = [(p, s) for p, s in pairs if s != "default"] or pairs
    setting = ", ".join(".".join(p) for p, _ in given)
    yield SettingsProblem(setting, ", ".join(s for _, s in given), message)


def _named_paths(sub: type[BaseModel], message: str) -> list[tuple[str, ...]]:
    """The fields of `sub` a cross-field message names: `section.field` where a field is a
    section of its own (a check across sections), else the bare field name."""
    named: list[tuple[str, ...]] = []
    for f in sub.model_fields:
        inner = submodel(sub.model_fields[f].annotation)
        dotted = []
        if inner is not None:
            dotted = [
                (f, g)
                for g in inner.model_fields
                if re.search(rf"\b{re.escape(f)}\.{re.escape(g)}\b", message)
            ]
        if dotted:
            named.extend(dotted)
        elif re.search(rf"\b{re.escape(f)}\b", message):
            named.append((f,))
    return named


def _unknown(
    model: type[BaseModel],
    path: tuple[str, ...],
    flags: Mapping[str, str],
    environ: Mapping[str, str],
) -> SettingsProblem:
    parent = field_info(model, path[:-1]) if len(path) > 1 else None
    sub = submodel(parent.annotation) if parent is not None else model
    known = list(sub.model_fields) if sub is not None else []
    near = difflib.get_close_matches(path[-1], known, n=1, cutoff=0.6)
    source = source_of(path, flags, environ)
    suggestion = None
    if near:
        better = (*path[:-1], near[0])
        suggestion = env_name(better) if source.startswith("environment") else ".".join(better)
    return SettingsProblem(".".join(path), source, "no such setting", None, suggestion)


def unknown_variables(
    model: type[BaseModel], environ: Mapping[str, str], other_sections: bool = False
) -> list[SettingsProblem]:
    """`NEARDUP_*` variables that set nothing in `model`. With `other_sections`, a
    `NEARDUP_X__Y` whose section X `model` lacks, and is not a near-miss of one it has, is
    left alone (another command reads it, e.g. the worker's `NEARDUP_KAFKA__*` in `dedup`). Unknown fields of a known
    section are not listed: validating the model reports them."""
    known = known_variables(model)
    sections = {path[0] for path in known.values() if len(path) == 2}
    found = []
    for key in sorted(environ):
        name = key.upper()
        if not name.startswith(PREFIX) or name in known or name in OTHER_VARIABLES:
            continue
        section = name[len(PREFIX) :].split("__", 1)[0].lower()
        if "__" in name[len(PREFIX) :]:
            near = difflib.get_close_matches(section, sections, n=1, cutoff=0.8)
            if section in sections or (other_sections and not near):
                continue
        found.append(
            SettingsProblem(
                key,
                f"environment variable {key}",
                "matches no setting",
                None,
                _nearest_variable(name, known),
            )
        )
    return found


def _nearest_variable(name: str, known: Mapping[str, tuple[str, ...]]) -> str | None:
    """The known variable `name` was most likely meant as: the whole name when it is close,
    else the same field under the nearest section (`NEARDUP_DEDUPE__THRESHOLD`)."""
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    if near:
        return near[0]
    section, _, field = name[len(PREFIX) :].partition("__")
    sections = sorted({path[0].upper() for path in known.values() if len(path) == 2})
    close = difflib.get_close_matches(section, sections, n=1, cutoff=0.6)
    if field and close and f"{PREFIX}{close[0]}__{field}" in known:
        return f"{PREFIX}{close[0]}__{field}"
    return None


def unparsable(exc: Exception, environ: Mapping[str, str]) -> SettingsProblem:
    """A pydantic-settings `SettingsError` (a variable it could not parse, e.g. a section
    given as invalid JSON: `NEARDUP_DEDUP={...`) as a problem naming the variables."""
    match = re.search(r'field "([^"]+)"', str(exc))
    field = match.group(1) if match else ""
    names = [
        key
        for key in sorted(environ)
        if field and re.fullmatch(rf"{PREFIX}{field}(__\w+)?", key, re.IGNORECASE)
    ]
    cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
    return SettingsProblem(
        field or "settings",
        "environment variable " + ", ".join(names) if names else "environment",
        f"cannot be parsed{cause}",
        "a JSON object of the section's fields" if names == [env_name((field,))] else None,
    )


def format_problems(found: list[SettingsProblem], heading: str = "invalid settings") -> str:
    """One line per problem under a heading."""
    return f"{heading}:\n" + "\n".join(f"  - {p}" for p in found)
