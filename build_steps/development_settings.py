"""Which settings of a run are development settings, and which ``--pass-env`` names are allowed.

The data is ``development_settings.toml`` beside the profiles: the run options, the ``--cmake-define``
keys that change how libmxnet is compiled or linked, the host workarounds a release run may still
use, and the ``--pass-env`` allow-list, each with its reason. This module checks the file against a
schema when it is loaded and answers, for one run, what makes it a development build.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Container, Iterable, Mapping

from .checked_toml import load_checked_toml
from .errors import SettingsDataError, UsageError
from .profile_data import Profile

SETTINGS_FILE = Path(__file__).resolve().with_name("development_settings.toml")

_STR = {"type": "string", "minLength": 1}
_KEYED = {"type": "object", "additionalProperties": _STR}
SETTINGS_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["options", "cmake_defines", "host_workarounds", "pass_env"],
    "properties": {
        "options": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": False, "required": ["option", "reason"],
            "properties": {"option": {"type": "string", "pattern": "^--[a-z-]+(=[a-z]+)?$"}, "reason": _STR}}},
        "cmake_defines": _KEYED,
        "host_workarounds": _KEYED,
        "pass_env": {"type": "object", "additionalProperties": _STR,
                     "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
    },
}

#: Names that look like a credential or a key to one: refused by --pass-env whatever the allow-list
#: says (the allow-list is checked against them when loaded), and never passed to a child.
CREDENTIAL_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*",
                       "*API_KEY*", "*_KEY", "*KEY_*", "*JWT*", "*AUTH*", "*COOKIE*", "*SESSION*",
                       "SSH_*", "GPG_*", "AWS_*", "GH_*", "GITHUB_*", "NPM_*", "PYPI_*", "TWINE_*")


@dataclass(frozen=True)
class DevelopmentSettings:
    #: pytest dest -> (the option as written, why it is a development setting)
    options: dict[str, tuple[str, str]]
    #: --cmake-define key pattern -> why
    cmake_defines: dict[str, str]
    #: --cmake-define key -> why a host may need it
    host_workarounds: dict[str, str]
    #: --pass-env name -> why a probe may need it
    pass_env: dict[str, str]


def is_credential_name(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name.upper(), p) for p in CREDENTIAL_PATTERNS)


def load_settings(path: Path = SETTINGS_FILE) -> DevelopmentSettings:
    path = Path(path)
    data = load_checked_toml(path, SETTINGS_SCHEMA, SettingsDataError)
    credential = sorted(n for n in data["pass_env"] if is_credential_name(n))
    if credential:
        raise SettingsDataError(f"{path}: pass_env: {', '.join(credential)} look(s) like a credential; "
                                "the allow-list may not hold one")
    return DevelopmentSettings(
        options={dest: (v["option"], v["reason"]) for dest, v in data["options"].items()},
        cmake_defines=dict(data["cmake_defines"]), host_workarounds=dict(data["host_workarounds"]),
        pass_env=dict(data["pass_env"]))


SETTINGS = load_settings()

#: Dests whose sentence build_steps.overrides writes itself (it names the archs, the level).
SHORTHANDS = ("cuda_arch_native", "fast_compile")


def option_dests() -> tuple[str, ...]:
    """The pytest dests of the development run options (what make_options reads them from)."""
    return tuple(d for d in SETTINGS.options if d not in SHORTHANDS)


def used_options(raw: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """``(as written, reason)`` for each development run option set in ``raw`` (option dest ->
    value as pytest parsed it), in the data file's order."""
    used: list[tuple[str, str]] = []
    for dest in option_dests():
        value = raw.get(dest)
        if not value:
            continue
        option, reason = SETTINGS.options[dest]
        if isinstance(value, (list, tuple)):
            written = " ".join(f"{option}={v}" for v in value)
        elif value is True:
            written = option
        else:
            written = f"{option}={value}"
        used.append((written, reason))
    return tuple(used)


def cmake_define_reason(key: str, profile: Profile) -> str | None:
    """Why ``--cmake-define KEY=...`` makes a development build, or None (a host workaround, or
    a toggle of the profile, judged by build_steps.overrides against the profile's value)."""
    if key in SETTINGS.host_workarounds:
        return None
    for pattern, reason in SETTINGS.cmake_defines.items():
        if fnmatch.fnmatchcase(key, pattern):
            return reason
    if key in profile.configure_flags:
        return None
    return f"not a setting of the {profile.name} profile: the release is configured with the profile's definitions only"


def host_workarounds(cmake_defines: Mapping[str, str]) -> list[str]:
    """``-DKEY=VALUE (why)`` for each host workaround among the run's defines."""
    return [f"-D{k}={v} ({SETTINGS.host_workarounds[k]})" for k, v in cmake_defines.items()
            if k in SETTINGS.host_workarounds]


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_pass_env(names: Iterable[object] | None, leaky: Container[str] = ()) -> tuple[str, ...]:
    """``--pass-env NAME`` values: each must be on the allow-list (SETTINGS.pass_env); anything
    credential-shaped, or a loader/import variable (``leaky``), is refused by name."""
    out: list[str] = []
    for given in names or ():
        name = str(given).strip()
        if not _NAME.match(name):
            raise UsageError(f"--pass-env {name!r}: give one variable name (letters, digits, _), e.g. "
                             "--pass-env MXNET_CUDNN_AUTOTUNE_DEFAULT")
        if is_credential_name(name):
            matched = next(p for p in CREDENTIAL_PATTERNS if fnmatch.fnmatchcase(name.upper(), p))
            raise UsageError(f"--pass-env {name}: the name matches a secret pattern ({matched}): it is "
                             "credential-shaped, and the wheel's code never gets credentials")
        if name in leaky:
            raise UsageError(f"--pass-env {name}: a loader/import variable would let the venv find "
                             "libraries or modules outside itself, which the install gates exist to catch")
        if name not in SETTINGS.pass_env:
            raise UsageError(f"--pass-env {name}: not on the allow-list of variables a probe may need "
                             f"({', '.join(SETTINGS.pass_env)}; {SETTINGS_FILE.name} [pass_env], "
                             "docs/development_settings.md); add it there with its reason if a probe needs it")
        out.append(name)
    return tuple(dict.fromkeys(out))
