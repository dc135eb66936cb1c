"""A TOML data file read and checked against its JSON Schema, for every data file of the harness.

profiles.toml and development_settings.toml are both data that code trusts once loaded: each is
read here, checked with jsonschema (the error closest to the cause, ``best_match``), and a fault
is raised as the caller's error class with one message format: ``<file>: <where>: <what>``, where
``<where>`` is the dotted key path with list indexes in brackets (``profiles.cpu.requirements[2]``).
"""
from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema


def key_path(parts: Iterable[str | int]) -> str:
    """``("profiles", "cpu", "requirements", 2)`` -> ``profiles.cpu.requirements[2]``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def load_checked_toml(path: Path, schema: dict[str, Any], error_cls: type[Exception]) -> dict[str, Any]:
    """The data of the TOML file ``path``, checked against ``schema``; ``error_cls`` naming the
    file and the offending key when it is not TOML or breaks the schema."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise error_cls(f"{path}: not valid TOML: {exc}") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        raise error_cls(f"{path}: {key_path(error.absolute_path) or 'top level'}: {error.message}")
    return data
