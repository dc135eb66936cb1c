"""Turn distributions installed in this interpreter into wheels: a wheelhouse for an offline host.

The GPU host has no network but already holds the nvidia-* cu13 libraries, pytest, scipy and the
rest in its Python. The throwaway venv must install the wheel's dependencies with pip (that is
what the gates check), so each installed distribution that the named requirements reach is
packed back into a wheel, file for file from its RECORD, under its own name, version and tags:

    python gpu/wheelhouse_from_site.py OUTDIR 'nvidia-cudnn-cu13' 'pytest-xdist' ... [--skip numpy]

Requirements are followed through each distribution's Requires-Dist (markers evaluated, extras
not followed); names given with --skip (carried as real wheels instead) are left out. Files a
RECORD lists outside site-packages (console scripts) are not packed: pip writes its own.
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from wheel.wheelfile import WheelFile


def closure(roots, skip) -> list[md.Distribution]:
    """The installed distributions ``roots`` reach (by canonical name), minus ``skip``."""
    by_name = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if name:
            by_name.setdefault(canonicalize_name(name), dist)
    found, todo = {}, [canonicalize_name(Requirement(r).name) for r in roots]
    while todo:
        name = todo.pop()
        if name in found or name in skip:
            continue
        dist = by_name.get(name)
        if dist is None:
            print(f"not installed here: {name}", file=sys.stderr)
            continue
        found[name] = dist
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return list(found.values())


def repack(dist: md.Distribution, outdir: Path) -> Path:
    """One installed distribution as a wheel in ``outdir``."""
    info = Path(dist._path)  # the .dist-info directory
    site = info.parent
    tags = [line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines()
            if line.startswith("Tag:")] or ["py3-none-any"]
    # named after the installed .dist-info, so the RECORD WheelFile writes lands in that directory
    stem = info.name[:-len(".dist-info")]
    tag = ".".join(sorted({t.split("-")[0] for t in tags})) + "-" + \
        ".".join(sorted({t.split("-")[1] for t in tags})) + "-" + \
        ".".join(sorted({t.split("-")[2] for t in tags}))
    target = outdir / f"{stem}-{tag}.whl"
    # stored, not deflated: the nvidia-* libraries are gigabytes, and this wheelhouse never travels
    with WheelFile(target, "w", compression=zipfile.ZIP_STORED) as wf:
        for entry in dist.files or ():
            path = (site / entry).resolve()
            rel = path.relative_to(site.resolve()) if path.is_relative_to(site.resolve()) else None
            if rel is None or rel.parts[0] == "__pycache__" or "__pycache__" in rel.parts:
                continue
            if rel.name == "RECORD" and rel.parent.name.endswith(".dist-info"):
                continue  # WheelFile writes a fresh one
            if path.is_file():
                wf.write(str(path), str(rel))
    return target


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("requirements", nargs="+")
    ap.add_argument("--skip", action="append", default=[], help="a distribution not to pack (repeatable)")
    args = ap.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    skip = {canonicalize_name(s) for s in args.skip}
    for dist in sorted(closure(args.requirements, skip), key=lambda d: d.metadata["Name"].lower()):
        wheel = repack(dist, args.outdir)
        print(f"{wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
