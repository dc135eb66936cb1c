"""The CUDA wheels' lock: what ``--cuda-from-wheels`` installs, pinned by version and file hash.

A host's pip configuration (``/etc/pip.conf``, the user's, ``PIP_*`` variables) can add indexes,
find-links directories and constraints; pip then picks whatever version it likes best among them
(measured: cuDNN 9.24 instead of 9.28, cuBLAS 13.1.1.3 instead of 13.10 from a mirror). The lock
(a file beside profiles.toml, named by the CUDA stack's ``wheel_lock``: ``cuda_wheels.lock.toml``
for CUDA 13) fixes each distribution's version and sha256, and pip runs
isolated from every configuration (``--isolated`` for the user's file and ``PIP_*``,
``PIP_CONFIG_FILE=/dev/null`` for the global ones) with ``--require-hashes`` and an explicit
index. After the install the versions present are compared with the lock: a difference fails the
run, naming both.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Iterable, Mapping

from packaging.utils import canonicalize_name

DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    hashes: tuple[str, ...]       # sha256 of each acceptable file

    def requirement_line(self) -> str:
        return f"{self.name}=={self.version} " + " ".join(f"--hash=sha256:{h}" for h in self.hashes)


def load(path: Path) -> tuple[Pin, ...]:
    """The pins of a lock file; ValueError naming the file and entry when one is incomplete."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    pins: list[Pin] = []
    for i, entry in enumerate(data.get("wheel", [])):
        hashes = tuple(f.get("sha256", "") for f in entry.get("files", []))
        if not entry.get("name") or not entry.get("version") or not hashes or not all(hashes):
            raise ValueError(f"{path}: wheel entry {i + 1} needs name, version and files with sha256")
        pins.append(Pin(canonicalize_name(entry["name"]), entry["version"], hashes))
    if not pins:
        raise ValueError(f"{path}: no [[wheel]] entries")
    return tuple(pins)


def requirements_text(pins: Iterable[Pin]) -> str:
    return "".join(p.requirement_line() + "\n" for p in pins)


def pip_command(python: str, target: Path, requirements_file: Path,
                find_links: Iterable[str | os.PathLike[str]] = (),
                index_url: str | None = None, no_index: bool = False) -> list[str]:
    """pip install of exactly the locked files: only the index and find-links named here."""
    cmd = [python, "-m", "pip", "--isolated", "install", "--disable-pip-version-check", "--no-input",
           "--no-deps", "--require-hashes", "--only-binary=:all:", "--target", str(target),
           "-r", str(requirements_file)]
    cmd += ["--no-index"] if no_index else ["--index-url", index_url or DEFAULT_INDEX]
    for fl in find_links:
        cmd += ["--find-links", str(fl)]
    # a host's CA bundle (a TLS-intercepting proxy) still applies: it can refuse a server, never
    # offer another file, and --isolated would drop it with the rest of PIP_*
    if os.environ.get("PIP_CERT"):
        cmd += ["--cert", os.environ["PIP_CERT"]]
    return cmd


def pip_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment pip runs in: no PIP_* setting of the host, and no configuration file."""
    env = {k: v for k, v in (base if base is not None else os.environ).items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def installed_versions(target: Path) -> dict[str, str]:
    """name -> version of the distributions installed under ``target`` (pip --target)."""
    return {canonicalize_name(d.metadata["Name"]): d.version
            for d in metadata.distributions(path=[str(target)])}


def mismatches(target: Path, pins: Iterable[Pin]) -> list[str]:
    """One line per locked distribution whose installed version differs (or is missing)."""
    have = installed_versions(target)
    return [f"{p.name}: installed {have.get(p.name, 'nothing')}, lock {p.version}"
            for p in pins if have.get(p.name) != p.version]


#: Beside the wheels: each file's stat signature when its content last matched RECORD, so a later
#: run hashes only what changed (2.8 GB read cold takes ~25 s; a truncation changes size and mtime).
VERIFIED = ".verified.json"


def damaged(target: Path) -> list[str]:
    """One line per installed file under ``target`` (pip --target) that no longer matches its
    distribution's RECORD (size, then sha256), or that is missing: the cache is verified, not
    believed (issue 42, item 3). A file truncated by a killed copy or a full disk would otherwise
    surface at the build's final link, naming neither the cache nor the fix. Rows without a hash
    (pip's own INSTALLER, the .pyc files it compiled) are not checked. A file whose size, mtime
    and inode are those it had when it last matched is not hashed again (VERIFIED)."""
    import hashlib
    import json

    from .readers.wheel_record import b64, parse_record, record_algo
    out: list[str] = []
    root = Path(target).resolve()
    try:
        memo = json.loads((root / VERIFIED).read_text())
    except (OSError, ValueError):
        memo = {}
    seen: dict[str, list[str | int]] = {}
    for record in sorted(root.glob("*.dist-info/RECORD")):
        problems: list[str] = []
        rows = parse_record(record.read_text(encoding="utf-8", errors="replace"), problems)
        out += [f"{record.relative_to(root)}: {p}" for p in problems]
        for name, (digest, size) in rows.items():
            if not digest:
                continue
            path = (root / name).resolve()
            if root not in path.parents:
                continue  # a script pip put beside the target (bin/): not part of the CUDA root
            try:
                st = path.stat()
                if size and st.st_size != int(size):
                    out.append(f"{name}: {st.st_size} bytes, RECORD says {size}")
                    continue
                signature: list[str | int] = [digest, st.st_size, st.st_mtime_ns, st.st_ino]
                if memo.get(name) != signature:
                    algo = record_algo((digest, size))
                    with open(path, "rb") as fh:
                        got = f"{algo}={b64(hashlib.file_digest(fh, algo).digest())}"
                    if got != digest:
                        out.append(f"{name}: content differs from RECORD")
                        continue
                seen[name] = signature
            except FileNotFoundError:
                out.append(f"{name}: missing")
            except (OSError, ValueError) as exc:
                out.append(f"{name}: unreadable ({exc})")
    if not out and seen != memo:
        try:
            (root / VERIFIED).write_text(json.dumps(seen))
        except OSError:
            pass  # a read-only cache is verified again next time
    return out


def toolchain_entry(target: Path) -> dict[str, str]:
    """The installed CUDA wheels, for the report's toolchain section."""
    return dict(sorted(installed_versions(target).items()))
