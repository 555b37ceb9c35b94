"""What a setting is called and what it accepts: its environment variable, its flags, and its
type and bounds in words. Read from the settings models and the command-line parsers, so
error messages (`settings_errors`) and the settings reference (`docs/settings.md`) never
drift from the code.

A setting `section.field` is the variable `NEARDUP_SECTION__FIELD` (case-insensitive, as
pydantic-settings reads it) and, where a flag sets it, that flag.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr

PREFIX = "NEARDUP_"
# Variables read outside the settings models (start-up, tests): never reported as unknown.
OTHER_VARIABLES = frozenset(
    {
        "NEARDUP_FAILPOINTS",
        "NEARDUP_JIT_CACHE_SEED",
        "NEARDUP_CACHE_DIR",
        "NEARDUP_KERNELS",
        "NEARDUP_BUILD_WARMUP",
    }
)


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


def field_info(model: type[BaseModel], path: tuple[str, ...]) -> Any:
    """The pydantic FieldInfo at `path` (`("dedup", "threshold")`), or None."""
    info = None
    for part in path:
        if model is None or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        model = submodel(info.annotation)  # type: ignore[assignment]
    return info


def submodel(annotation: Any) -> type[BaseModel] | None:
    """The model class a section's annotation names, or None for a plain field."""
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
    info = field_info(model, path)
    if info is None or submodel(info.annotation) is not None:
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


def known_variables(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Every environment variable `model` reads -> its setting path."""
    names: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        names[env_name((name,))] = (name,)
        sub = submodel(info.annotation)
        for field in sub.model_fields if sub is not None else ():
            names[env_name((name, field))] = (name, field)
    return names
