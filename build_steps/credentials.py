"""Credential-shaped environment variables: the verify run needs none (issue 29).

Publishing is its own step (``mxnet-release publish``); a build-and-verify run that finds a token,
a password or an agent socket in its environment refuses to start unless the user names the step
that needs it (``--credential-for NAME=STEP``), so a credential is never in reach of the tree's or
the wheel's code by accident. The names are patterns, not a list of known services: a new service's
``*_TOKEN`` is refused without an edit here.
"""
from __future__ import annotations

import fnmatch
from typing import Iterable, Mapping

from .errors import UsageError

#: What a credential's variable is called (matched case-insensitively).
CREDENTIAL_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*",
                       "*API_KEY*", "*APIKEY*", "*PRIVATE_KEY*", "*SIGNING_KEY*", "*_JWT", "*_JWT_*",
                       "*AUTH_TOKEN*", "NPM_AUTH*", "AWS_ACCESS_KEY_ID", "SSH_AUTH_SOCK", "GPG_*",
                       "TWINE_*", "PYPI_*")


def is_credential_name(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p) for p in CREDENTIAL_PATTERNS)


def parse_credential_steps(values: Iterable[str] | None, steps: Iterable[str]) -> dict:
    """``--credential-for NAME=STEP`` values -> {NAME: STEP}; a malformed one is a UsageError."""
    steps = tuple(steps)
    out = {}
    for value in values or ():
        name, sep, step = value.partition("=")
        if not sep or not name or step not in steps:
            raise UsageError(f"--credential-for {value}: write NAME=STEP, STEP one of {', '.join(steps)} "
                             "(the build step that needs the variable)")
        out[name] = step
    return out


def unexplained_credentials(environ: Mapping[str, str], explained: Mapping[str, str]) -> list:
    """Credential-shaped names set (non-empty) in ``environ`` that no ``--credential-for`` names."""
    return sorted(k for k, v in environ.items() if v and is_credential_name(k) and k not in explained)
