"""Credential-shaped environment variables: the verify run needs none (issue 29).

Publishing is its own step (``mxnet-release publish``); a build-and-verify run that finds a token,
a password or an agent socket in its environment refuses to start unless the user names the step
that needs it (``--credential-for NAME=STEP``), so a credential is never in reach of the tree's or
the wheel's code by accident. What counts as a credential is data, ``credentials.toml`` beside this
file, with the cases the rule is checked against (issue 40): whole words of the name (``GH_TOKEN``,
``OPENAI_API_KEY``), not a substring (``TIKTOKEN_CACHE_DIR`` is a tokenizer's cache).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from .checked_toml import load_checked_toml
from .errors import UsageError

RULE_FILE = Path(__file__).with_name("credentials.toml")
_NAMES = {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"}}
_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["rule", "cases"],
    "properties": {
        "rule": {"type": "object", "additionalProperties": False,
                 "required": ["words", "pairs", "names", "not_credentials"],
                 "properties": {"words": _NAMES, "pairs": _NAMES, "names": _NAMES, "not_credentials": _NAMES}},
        "cases": {"type": "object", "additionalProperties": False, "required": ["credential", "not_credential"],
                  "properties": {"credential": _NAMES, "not_credential": _NAMES}},
    },
}
_SPLIT = re.compile(r"[_.-]+")


@dataclass(frozen=True)
class CredentialRule:
    words: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    names: frozenset[str]
    not_credentials: frozenset[str]
    credential_cases: tuple[str, ...]
    not_credential_cases: tuple[str, ...]

    def matches(self, name: str) -> bool:
        upper = name.upper()
        if upper in self.not_credentials:
            return False
        if upper in self.names:
            return True
        words = [w for w in _SPLIT.split(upper) if w]
        return any(w in self.words for w in words) or any(p in self.pairs for p in zip(words, words[1:]))


def load_rule(path: Path = RULE_FILE) -> CredentialRule:
    data = load_checked_toml(path, _SCHEMA, UsageError)
    rule, cases = data["rule"], data["cases"]

    def up(xs: Iterable[str]) -> frozenset[str]:
        return frozenset(x.upper() for x in xs)
    return CredentialRule(
        words=up(rule["words"]), names=up(rule["names"]), not_credentials=up(rule["not_credentials"]),
        pairs=frozenset(tuple(p.upper().split("_", 1)) for p in rule["pairs"]),
        credential_cases=tuple(cases["credential"]), not_credential_cases=tuple(cases["not_credential"]))


RULE = load_rule()


def is_credential_name(name: str) -> bool:
    return RULE.matches(name)


def parse_credential_steps(values: Iterable[str] | None, steps: Iterable[str]) -> dict[str, str]:
    """``--credential-for NAME=STEP`` values -> {NAME: STEP}; a malformed one is a UsageError."""
    steps = tuple(steps)
    out: dict[str, str] = {}
    for value in values or ():
        name, sep, step = value.partition("=")
        if not sep or not name or step not in steps:
            raise UsageError(f"--credential-for {value}: write NAME=STEP, STEP one of {', '.join(steps)} "
                             "(the build step that needs the variable)")
        out[name] = step
    return out


def unexplained_credentials(environ: Mapping[str, str], explained: Mapping[str, str]) -> list[str]:
    """Credential-shaped names set (non-empty) in ``environ`` that no ``--credential-for`` names."""
    return sorted(k for k, v in environ.items() if v and is_credential_name(k) and k not in explained)
