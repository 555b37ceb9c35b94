"""Settings errors a person can act on, shared by `dedup`, `compare` and the worker.

A pydantic `ValidationError` names a location (`('dedup', 'shingle_size')`) and a message.
This module turns it into: the setting, where its value came from (a flag, an environment
variable, or the default), what is accepted, and for an unknown name the nearest known one.
It also finds `NEARDUP_*` variables that match no setting at all (pydantic-settings ignores
them silently, e.g. `NEARDUP_DEDUP_THRESHOLD` with one underscore), so the caller can warn.

Names: a setting `section.field` is the variable `NEARDUP_SECTION__FIELD` (case-insensitive,
as pydantic-settings reads it) and, where a flag sets it, that flag.
"""

from __future__ import annotations

import argparse
import difflib
import re
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr, ValidationError

PREFIX = "NEARDUP_"
# Variables read outside the settings models (start-up, tests): never reported as unknown.
OTHER_VARIABLES = frozenset({"NEARDUP_FAILPOINTS", "NEARDUP_JIT_CACHE_SEED", "NEARDUP_CACHE_DIR"})


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


def env_name(path: tuple[str, ...]) -> str:
    """`('dedup', 'threshold')` -> `NEARDUP_DEDUP__THRESHOLD`."""
    return PREFIX + "__".join(part.upper() for part in path)


def flag_names(
    parser: argparse.ArgumentParser, overrides: Callable[[argparse.Namespace], Any]
) -> dict[str, str]:
    """Setting path -> flag, found by running `overrides` (args -> `with_overrides` sections)
    on a namespace whose every value is its own flag."""
    names = argparse.Namespace()
    for action in parser._actions:
        long = [s for s in action.option_strings if s.startswith("--")]
        if long and action.dest != "help":
            setattr(names, action.dest, long[0])
    found = {}
    for section, values in overrides(names).items():
        for field, flag in values.items():
            if isinstance(flag, str) and flag.startswith("--"):
                found[f"{section}.{field}"] = flag
    return found


def given_flags(
    parser: argparse.ArgumentParser,
    overrides: Callable[[argparse.Namespace], Any],
    args: argparse.Namespace,
) -> dict[str, str]:
    """Setting path -> flag, for the flags present in `args`."""
    names = flag_names(parser, overrides)
    given = {
        f"{section}.{field}"
        for section, values in overrides(args).items()
        for field, value in values.items()
        if value is not None
    }
    return {path: flag for path, flag in names.items() if path in given}


def _field(model: type[BaseModel], path: tuple[str, ...]) -> Any:
    """The pydantic FieldInfo at `path`, or None."""
    info = None
    for part in path:
        if model is None or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        model = _submodel(info.annotation)  # type: ignore[assignment]
    return info


def _submodel(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _kind(annotation: Any) -> tuple[str, bool]:
    """Words for a type, and whether it may be unset."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        word, _ = _kind(options[0]) if len(options) == 1 else ("a value", False)
        return word, True
    if origin is Literal:
        return "one of " + ", ".join(str(v) for v in get_args(annotation)), False
    words = {
        int: "an integer",
        float: "a number",
        bool: "true or false",
        str: "text",
        SecretStr: "text (a secret)",
    }
    if origin is tuple:
        return "comma-separated names", False
    return words.get(annotation, getattr(annotation, "__name__", "a value")), False


def accepted(model: type[BaseModel], path: tuple[str, ...]) -> str | None:
    """What the field at `path` accepts, e.g. "an integer from 1 to 32"."""
    info = _field(model, path)
    if info is None or _submodel(info.annotation) is not None:
        return None
    word, optional = _kind(info.annotation)
    bounds: dict[str, Any] = {}
    for item in info.metadata:
        for name in ("ge", "gt", "le", "lt", "min_length"):
            if isinstance(item, annotated_types.BaseMetadata) and hasattr(item, name):
                bounds[name] = getattr(item, name)
    low = ("ge", bounds["ge"]) if "ge" in bounds else ("gt", bounds.get("gt"))
    high = ("le", bounds["le"]) if "le" in bounds else ("lt", bounds.get("lt"))
    if low[1] is not None and high[1] is not None and low[0] == "ge" and high[0] == "le":
        word += f" from {low[1]} to {high[1]}"
    else:
        signs = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
        parts = [f"{signs[k]} {v}" for k, v in (low, high) if v is not None]
        if parts:
            word += " " + " and ".join(parts)
    if bounds.get("min_length"):
        word = "non-empty " + word
    return word + (" (or unset)" if optional else "")


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
        info = _field(model, path)
        sub = _submodel(info.annotation) if info is not None else model if not path else None
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
    named = [f for f in sub.model_fields if re.search(rf"\b{re.escape(f)}\b", message)]
    paths = [(*path, f) for f in named] or [path]
    sources = [source_of(p, flags, environ) for p in paths]
    pairs = list(zip(paths, sources, strict=True))
    given = [(p, s) for p, s in pairs if s != "default"] or pairs
    setting = ", ".join(".".join(p) for p, _ in given)
    yield SettingsProblem(setting, ", ".join(s for _, s in given), message)


def _unknown(
    model: type[BaseModel],
    path: tuple[str, ...],
    flags: Mapping[str, str],
    environ: Mapping[str, str],
) -> SettingsProblem:
    parent = _field(model, path[:-1]) if len(path) > 1 else None
    sub = _submodel(parent.annotation) if parent is not None else model
    known = list(sub.model_fields) if sub is not None else []
    near = difflib.get_close_matches(path[-1], known, n=1, cutoff=0.6)
    source = source_of(path, flags, environ)
    suggestion = None
    if near:
        better = (*path[:-1], near[0])
        suggestion = env_name(better) if source.startswith("environment") else ".".join(better)
    return SettingsProblem(".".join(path), source, "no such setting", None, suggestion)


def known_variables(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Every environment variable `model` reads -> its setting path."""
    names: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        names[env_name((name,))] = (name,)
        sub = _submodel(info.annotation)
        for field in sub.model_fields if sub is not None else ():
            names[env_name((name, field))] = (name, field)
    return names


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
                "matches no setting and is ignored",
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
