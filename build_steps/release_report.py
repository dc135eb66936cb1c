"""The release report: what a green verify run hands to the publish step (issue 29).

The verify run (``-m release --publish --release-report=R``) holds no credential; its publish gate
writes R once every gate of the release set passed. ``mxnet-release publish --report=R`` holds the
token and runs no code of the tree or the wheel: it checks the report's digest, that it is a whole
release set's PASS made by this harness (the same release manifests, gate module hashes included),
pins the wheel again (a private copy, hashed while copied) and only then tags and releases.

The digest is an HMAC-SHA256 over the report's content (the wheel's sha256 among it) with a key
kept in the user's config dir (0600), which the sandboxed children of a run cannot read (their HOME
is a private empty dir): a report forged or edited after the run does not verify. A key path a
sandbox could see (``check_key_place``: outside the homes and /tmp, or in a dir sandboxes get
back) is refused. A stolen key still forges reports: the publish step re-checks what it can
(build_steps.publish_step, docs/trust_model.md). A report made
on another host or by another user does not either; publish it from where it was made.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .atomic import write_atomic
from .errors import ReportRefused
from .pinning import sha256_of
from .release_manifest import FLAVORS, MANIFEST_DIR, load_manifest

SCHEMA = 1
KEY_ENV = "MXNET_RELEASE_REPORT_KEY_FILE"


def key_path() -> Path:
    explicit = os.environ.get(KEY_ENV)
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "mxnet-release" / "report.key"


def check_key_place(path: Path, also: Iterable[Path] = ()) -> None:
    """The key must lie where no sandboxed step of a run can read it (issue 41 item 5: with
    XDG_CONFIG_HOME or MXNET_RELEASE_REPORT_KEY_FILE outside HOME, every sandbox saw it and a tree's
    code copied it). Refused in one line before the key is made or read."""
    from .sandbox import seen_by_a_sandbox
    why = seen_by_a_sandbox(path, also)
    if why:
        raise ReportRefused(f"report key {path}: a sandboxed step could read it ({why}); keep it under your "
                            f"HOME outside ~/.cache (unset {KEY_ENV} and XDG_CONFIG_HOME for "
                            "~/.config/mxnet-release/report.key)")


def _key(create: bool, also: Iterable[Path] = ()) -> bytes:
    path = key_path()
    check_key_place(path, also)
    if not path.exists():
        if not create:
            raise ReportRefused(f"no report key at {path}: the report was made on another host or by another "
                                "user; publish from where the verify run ran")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    if path.stat().st_mode & 0o077:
        raise ReportRefused(f"report key {path} is readable by others (mode {oct(path.stat().st_mode & 0o777)}); "
                            f"chmod 600 {path}")
    return path.read_text().strip().encode()


def harness_version() -> str:
    """This harness's identity as the publish step checks it: its release manifests' bytes (the gate
    ids and every gate module's sha256)."""
    h = hashlib.sha256()
    for flavor in FLAVORS:
        h.update((MANIFEST_DIR / f"{flavor}.json").read_bytes())
    return h.hexdigest()


def _canonical(content: dict[str, Any]) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode()


def digest_of(content: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, _canonical(content), hashlib.sha256).hexdigest()


def release_content(*, flavor: str, repo: Path, remote: str, version: str, tag: str, commit: str,
                    wheel: Path, sha256: str, facts: dict[str, Any], gates_passed: Sequence[str],
                    verdicts: Mapping[str, str], excused: Iterable[str], assets: Iterable[Path],
                    parts: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The report's content, in the one shape ``mxnet-release publish --report`` reads
    (build_steps.publish_step), whoever writes it: a one-run release's publish row
    (harness.plugins.finish) or a split release's judge (build_steps.release_parts). ``assets``
    are uploaded beside the wheel, each under its path as given with its sha256 (checked again
    before the upload); ``parts``, a split release's runs (each report's file, sha256, host, date)."""
    content: dict[str, Any] = {
        "flavor": flavor, "repo": str(repo), "remote": remote,
        "release": {"version": version, "tag": tag, "commit": commit},
        "wheel": str(wheel), "sha256": sha256, "facts": facts,
        "gates_passed": list(gates_passed), "verdicts": dict(verdicts),
        "excused": sorted(excused), "assets": {str(a): sha256_of(a) for a in assets},
    }
    if parts is not None:
        content["parts"] = [dict(p) for p in parts]
    return content


def write_report(path: Path, content: dict[str, Any]) -> Path:
    content = {"schema": SCHEMA, "harness": harness_version(), **content}
    # the run's tree and the wheel's dir were its sandboxes' to write: no key there either
    seen = [Path(p) for p in (content.get("repo"), content.get("wheel") and Path(content["wheel"]).parent) if p]
    doc = {"content": content, "digest": digest_of(content, _key(create=True, also=seen))}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    return write_atomic(Path(path), lambda fh: fh.write(text), binary=False)


def read_report(path: Path) -> dict[str, Any]:
    """The report's content, once its digest, harness and release set checked out."""
    try:
        doc = json.loads(Path(path).read_text())
        # what write_report wrote: only its content carries the key's digest
        content: dict[str, Any] = doc["content"]
        digest = doc["digest"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReportRefused(f"publish --report {path}: not a release report ({exc}); pass the file the "
                            "verify run's --release-report wrote") from None
    if not hmac.compare_digest(str(digest), digest_of(content, _key(create=False))):
        raise ReportRefused(f"publish refused: {path}'s digest does not match its content: the report was "
                            "edited or forged after the verify run; run the verify run again")
    if content.get("harness") != harness_version():
        raise ReportRefused(f"publish refused: {path} was made by another harness version (other release "
                            "manifests or gate modules); run the verify run again with this harness")
    check_whole_set(content)
    return content


def check_whole_set(content: dict[str, Any]) -> None:
    flavor = content.get("flavor")
    if flavor not in FLAVORS:
        raise ReportRefused(f"publish refused: the report names no known flavor ({flavor!r})")
    verdicts = content.get("verdicts") or {}
    excused = set(content.get("excused") or ())
    missing = [g for g in load_manifest(flavor).gates if verdicts.get(g) != "passed" and g not in excused]
    if missing:
        shown = ", ".join(missing[:5]) + (f", ... {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ReportRefused(f"publish refused: the report is no whole-release-set PASS: {len(missing)} gate(s) "
                            f"of the {flavor} release set did not pass: {shown}")
