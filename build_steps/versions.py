"""The release version scheme: ``<version_prefix>.<YYYYMMDD>[.<N>]`` (``2.0.0+cu13.bw.20260614.1``),
PEP 440-valid, with the flavor's prefix from profiles.toml.

``profile`` arguments are build_steps.profile_data.Profile objects (not imported here: profile_data
builds its profiles with this module)."""
from __future__ import annotations

import re
from datetime import datetime, timezone

from typing import Any

from packaging.version import InvalidVersion, Version

from .errors import UsageError


def release_version(prefix: str, when: datetime | None = None) -> str:
    """The day's release version of a flavor whose versions start with ``prefix``."""
    when = when or datetime.now(timezone.utc)
    return f"{prefix}.{when:%Y%m%d}"


def release_version_pattern(prefix: str) -> re.Pattern[str]:
    """The release scheme ``<prefix>.<YYYYMMDD>[.<N>]`` as a pattern (groups: the date, N)."""
    return re.compile(re.escape(prefix) + r"\.(\d{8})(?:\.(\d+))?$")


def scheme_problem(version: str, profile: Any) -> str | None:
    # profile: a build_steps.profile_data.Profile, typed Any: profile_data imports this module
    """Why ``version`` (normalised PEP 440) does not follow ``profile``'s release scheme, else None:
    the prefix with its local segment (``+cu13.bw``: a ``+cu12`` wheel under the cuda profile is
    another stack's), and a date that exists on the calendar (``\\d{8}`` alone admits month 13)."""
    scheme = f"{profile.version_prefix}.<YYYYMMDD>[.<N>]"
    m = profile.version_pattern().match(version)
    if not m:
        return f"version {version!r} does not follow the {profile.name} release scheme {scheme}"
    try:
        datetime.strptime(m.group(1), "%Y%m%d")
    except ValueError:
        return (f"version {version!r} follows the {profile.name} release scheme {scheme} in form, but "
                f"{m.group(1)} is no calendar date")
    return None


def validate_version(value: str, profile: Any, *, strict_scheme: bool = False) -> str:
    # profile: a build_steps.profile_data.Profile, typed Any: profile_data imports this module
    """PEP 440-validate (and normalise) a wheel version; ``strict_scheme``: it must also follow
    ``profile``'s release scheme."""
    try:
        normalised = str(Version(value.strip()))
    except InvalidVersion:
        raise UsageError(
            f"version {value!r} is not a valid PEP 440 version; use e.g. "
            f"{profile.default_version()}.1") from None
    problem = scheme_problem(normalised, profile) if strict_scheme else None
    if problem:
        raise UsageError(problem)
    return normalised
