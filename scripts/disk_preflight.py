#!/usr/bin/env python3
"""Refuse to start the selftests on a disk that cannot hold them, with a message that says so.

A selftest run makes real wheels, CUDA roots and venvs. Without this check a short disk shows up
as dozens of ``OSError: [Errno 28]`` tracebacks minutes into the run (it did, in CI once).

The needs were measured on a fresh clone with an empty HOME (2026-12-02, peak of ``df`` during
``.ci/run``: 9.3 GB in all) and rounded up. Where two of the places share a filesystem their
needs add up.

Usage: disk_preflight.py CHECKOUT   (exit 1 with the shortfall named;
MXNET_HARNESS_SKIP_DISK_CHECK=1 turns the check off)
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

GB = 1 << 30

#: place -> (GB needed, what takes it)
NEEDS = {
    "checkout": (4.5, ".venv (0.3 GB) and the selftest wheels cached in .pytest_cache (3.9 GB)"),
    "cache": (3.5, "the CUDA 13 wheels behind --cuda-from-wheels (3.1 GB, "
                   "$MXNET_HARNESS_CACHE or ~/.cache/mxnet-release-harness)"),
    "tmp": (3.0, "pytest's temp dirs: sample-tree builds and child release runs (2.6 GB at peak)"),
}


def existing(path: Path) -> Path:
    """The nearest existing ancestor (the cache dir may not exist yet)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def places(checkout: Path) -> dict[str, Path]:
    cache = os.environ.get("MXNET_HARNESS_CACHE") or \
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mxnet-release-harness"
    return {"checkout": existing(checkout), "cache": existing(Path(cache)),
            "tmp": existing(Path(tempfile.gettempdir()))}


def shortfalls(checkout: Path, needs: dict | None = None) -> list[str]:
    """One line per filesystem whose free space is below what the places on it need together."""
    needs = NEEDS if needs is None else needs
    by_device: dict[int, list[str]] = {}
    where = places(checkout)
    for name, path in where.items():
        by_device.setdefault(path.stat().st_dev, []).append(name)
    problems = []
    for names in by_device.values():
        need = sum(needs[n][0] for n in names)
        path = where[names[0]]
        free = shutil.disk_usage(path).free / GB
        if free < need:
            parts = "; ".join(f"{n} {where[n]}: {needs[n][0]} GB for {needs[n][1]}" for n in names)
            problems.append(f"{free:.1f} GB free on the filesystem of {path}, the selftests need "
                            f"{need:.1f} GB there ({parts})")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: disk_preflight.py CHECKOUT", file=sys.stderr)
        return 2
    if os.environ.get("MXNET_HARNESS_SKIP_DISK_CHECK") == "1":
        return 0
    problems = shortfalls(Path(argv[1]))
    for p in problems:
        print(f"disk preflight: {p}", file=sys.stderr)
    if problems:
        print("disk preflight: free space there (old /tmp/pytest-of-* dirs are safe to remove), "
              "or point TMPDIR / MXNET_HARNESS_CACHE at a larger disk", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
