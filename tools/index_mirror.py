"""A package index on disk for an offline host: what a flavor's release run installs, as PEP 503.

An offline GPU host (this workplace's lent H100/H200) cannot reach PyPI. ``--no-index
--find-links=WHEELHOUSE`` is a development option (the installs then never resolve from an index),
so a release run there names a mirror of the index instead: ``--index-url file:///.../simple``,
which the installs' sandbox binds read-only (build_steps.venv.local_index_dirs). The mirror holds
what the run installs, resolved by pip for the host's interpreter and platform:

- the flavor's own Requires-Dist (profiles.toml's requirement groups: what the wheel declares);
- the gates' test requirements (build_steps.profile_data.GATE_TEST_REQUIREMENTS);
- the fork's acceptance suite's test requirements (build_steps/acceptance/shards.toml).

    python -m tools.index_mirror --flavor=cpu --python-version=3.12 OUT
        -> OUT/simple/<project>/index.html and the wheels beside them; the last line is the
           --index-url to give (file://OUT/simple, with OUT where the host will have it)

pip resolves the set once here (``pip download --only-binary=:all:`` for the target), so the
mirror is one consistent snapshot; the run's installer resolves against it again, as against PyPI.
The index pages are PEP 503's few lines (an anchor per file with its sha256), written here rather
than with a server or a generator package: nothing serves them, the installer reads the files.
"""
from __future__ import annotations

import argparse
import hashlib
import html
import subprocess
import sys
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from build_steps.acceptance.suite import load_suite
from build_steps.errors import FAIL, REFUSED
from build_steps.profile_data import GATE_TEST_REQUIREMENTS, PROFILES

#: The lent GPU hosts' interpreter (/opt/torch/.venv, CPython 3.12 on Ubuntu 24.04, glibc 2.39).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "any")


def requirements(flavor: str) -> list[str]:
    """What a release run of ``flavor`` installs beside (and with) its wheel, in one list."""
    profile = PROFILES[flavor]
    return list(dict.fromkeys([*profile.hard_requirements, *GATE_TEST_REQUIREMENTS,
                               *load_suite().test_requirements]))


def download(reqs: list[str], dest: Path, python_version: str) -> None:
    """``pip download`` of ``reqs`` and their dependencies, binary only, for the target interpreter."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
           "--python-version", python_version, "--implementation", "cp", "--dest", str(dest),
           *[a for p in PLATFORMS if p != "any" for a in ("--platform", p)], *reqs]
    subprocess.run(cmd, check=True)


def build_index(wheels: Path, out: Path) -> Path:
    """``out/simple``: a PEP 503 page per project, each wheel beside its page (href relative)."""
    simple = out / "simple"
    projects: dict[str, list[Path]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        name, _version, _build, _tags = parse_wheel_filename(wheel.name)
        projects.setdefault(canonicalize_name(name), []).append(wheel)
    for project, files in projects.items():
        page = simple / project
        page.mkdir(parents=True, exist_ok=True)
        anchors = []
        for wheel in files:
            target = page / wheel.name
            if target.resolve() != wheel.resolve():
                target.write_bytes(wheel.read_bytes())
            digest = hashlib.sha256(target.read_bytes()).hexdigest()
            anchors.append(f'<a href="{html.escape(wheel.name)}#sha256={digest}">{html.escape(wheel.name)}</a><br>')
        (page / "index.html").write_text("<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
    (simple / "index.html").write_text("<!DOCTYPE html>\n<html><body>\n" + "\n".join(
        f'<a href="{p}/">{p}</a><br>' for p in sorted(projects)) + "\n</body></html>\n")
    return simple


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.index_mirror", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--flavor", default="cpu", choices=sorted(PROFILES))
    parser.add_argument("--python-version", default="3.12")
    parser.add_argument("--wheels", type=Path, help="index these wheels (already downloaded) instead of downloading")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out}: exists and is not empty; give a new directory", file=sys.stderr)
        return REFUSED
    wheels = args.wheels or args.out / "download"
    if args.wheels is None:
        try:
            download(requirements(args.flavor), wheels, args.python_version)
        except subprocess.CalledProcessError as exc:
            print(f"pip download failed (exit {exc.returncode}): see its output above", file=sys.stderr)
            return FAIL
    simple = build_index(wheels, args.out)
    if args.wheels is None:
        for wheel in wheels.glob("*.whl"):
            wheel.unlink()
        wheels.rmdir()
    count = sum(1 for _ in simple.glob("*/*.whl"))
    size = sum(p.stat().st_size for p in simple.glob("*/*.whl"))
    print(f"{count} wheels, {size / 1e6:.1f} MB, {len(list(simple.glob('*/index.html')))} projects in {simple}")
    print(f"--index-url={simple.resolve().as_uri()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
