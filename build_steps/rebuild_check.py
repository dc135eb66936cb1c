"""``mxnet-release rebuild-check --wheel=W --mxnet-src=TREE``: rebuild the commit a wheel names and
compare the bytes, member by member; for a member that differs, name the objects that made it.

The commit is the stamp in W's libmxnet.so (MXNET_COMMIT_HASH in .rodata); TREE's HEAD must be
that commit and its tracked files clean (else exit 4 with the command that fixes it). The rebuild
is the harness's own build chain (configure, compile, stage, package) in a fresh build dir, with
W's version, run without the provenance gates so nothing reaches dist/. Objects are compared with
the build dir that made W (``--original-build-dir``, default TREE's one build dir with a
``.ninja_log``): each object the rebuild's ``.ninja_log`` lists is compared byte for byte with the
original's, and each that differs is named. Exit 0 only when every member is
byte-identical, 1 when something differs.
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, TextIO

from .errors import FAIL, NOT_JUDGED_EXIT, UsageError, WheelNameError
from .readers import gitstate
from .readers.elf import find_strings
from .readers.wheel_name import parse_wheel_name

LIBRARY = "libmxnet.so"


@dataclass
class Outcome:
    wheel: str
    rebuilt: str
    commit: str
    differing: list[str] = field(default_factory=list)       # member names
    objects: dict[str, list[str]] = field(default_factory=dict)         # member -> ["obj (why)", ...]
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.differing:
            return [f"rebuild-check: IDENTICAL: every member of {Path(self.wheel).name} rebuilt from "
                    f"commit {self.commit[:12]} has the same bytes ({self.rebuilt})"]
        out = [f"rebuild-check: DIFFERENT: {len(self.differing)} member(s) of {Path(self.wheel).name} differ "
               f"from a rebuild of commit {self.commit[:12]} ({self.rebuilt})"]
        for member in self.differing:
            out.append(f"  {member}")
            out += [f"    made by {o}" for o in self.objects.get(member, [])]
        return out + [f"  note: {n}" for n in self.notes]


def member_digests(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        return {i.filename: hashlib.sha256(zf.read(i)).hexdigest() for i in zf.infolist()
                if not i.is_dir()}


def differing_members(a: Path, b: Path) -> list[str]:
    da, db = member_digests(a), member_digests(b)
    return sorted(m for m in set(da) | set(db) if da.get(m) != db.get(m))


def commit_of(wheel: Path, scratch: Path) -> str:
    """The commit stamp of the wheel's libmxnet.so (UsageError when there is none, or several)."""
    with zipfile.ZipFile(wheel) as zf:
        libs = [n for n in zf.namelist() if n.rsplit("/", 1)[-1] == LIBRARY]
        if not libs:
            raise UsageError(f"--wheel {wheel}: no {LIBRARY} in it; pass an MXNet wheel the harness built")
        lib = scratch / LIBRARY
        lib.write_bytes(zf.read(libs[0]))
    stamps = sorted(set(find_strings(lib, gitstate.STAMP_IN_BINARY)))
    if len(stamps) != 1:
        raise UsageError(f"--wheel {wheel}: {LIBRARY} carries {len(stamps)} commit stamps "
                         f"({', '.join(s[:12] for s in stamps) or 'none'}); the commit to rebuild is unknown")
    return stamps[0]


def ninja_hashes(build_dir: Path) -> dict[str, str]:
    """output -> the hash of the command that last made it (the latest line of ``.ninja_log``)."""
    out: dict[str, str] = {}
    try:
        text = (Path(build_dir) / ".ninja_log").read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 5 and not line.startswith("#"):
            out[parts[3]] = parts[4]
    return out


def differing_objects(original: Path, rebuilt: Path) -> list[str]:
    """The objects the rebuild's ``.ninja_log`` lists whose bytes differ from the original build's:
    "path (why)". Ninja's command hashes say whether the command changed too; they differ for every
    object when the build dirs differ (the commands name them), so only a difference in the
    bytes names an object, and the command hash only adds to why when the dirs are one path."""
    before, after = ninja_hashes(original), ninja_hashes(rebuilt)
    same_dir = Path(original).resolve() == Path(rebuilt).resolve()
    found = []
    for obj in sorted(o for o in after if o.endswith(".o")):
        a, b = Path(original) / obj, Path(rebuilt) / obj
        if not a.is_file():
            found.append(f"{obj} (not in the original build)")
        elif not b.is_file() or a.read_bytes() != b.read_bytes():
            changed = same_dir and before.get(obj) not in (None, after[obj])
            found.append(f"{obj} ({'command and bytes differ' if changed else 'bytes differ'})")
    return found


def _check_tree(tree: Path, commit: str, allow_dirty: bool) -> None:
    state = gitstate.read_git_state(tree)
    if state.commit is None:
        raise UsageError(f"--mxnet-src {tree}: not a git checkout ({state.error}); the commit cannot be rebuilt")
    if state.commit != commit:
        raise UsageError(f"--mxnet-src {tree}: HEAD is {state.commit[:12]} but the wheel was built from "
                         f"{commit[:12]}; run `git -C {tree} checkout {commit}` and retry")
    if state.tracked_changes and not allow_dirty:
        raise UsageError(f"--mxnet-src {tree}: tracked files changed ({', '.join(state.tracked_changes[:3])}); "
                         "commit or stash them (or pass --allow-dirty to see what they change)")


def rebuild(tree: Path, version: str, build_dir: Path, extra: list[str], log: TextIO) -> Path:
    """The harness's build chain on ``tree`` into ``build_dir``; returns the staged wheel."""
    cmd = [sys.executable, "-m", "harness.cli", "-m", "release and build", "-k", "not install",
           "-p", "no:cacheprovider", "-p", "no:randomly", f"--mxnet-src={tree}", f"--build-dir={build_dir}",
           f"--wheel-version={version}", *extra]
    print("$ " + " ".join(cmd), file=log, flush=True)
    subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tree)
    wheels = sorted((build_dir / "harness-wheel").glob("*.whl"))
    if not wheels:
        raise RuntimeError(f"the rebuild made no wheel in {build_dir / 'harness-wheel'} (log above)")
    return wheels[-1]


def check(wheel: Path, tree: Path, build_dir: Path, original_build: Path | None, extra: list[str],
          allow_dirty: bool = False, log: TextIO | None = None) -> Outcome:
    log = log or sys.stderr
    with tempfile.TemporaryDirectory(prefix="rebuild-check-") as scratch_dir:
        scratch = Path(scratch_dir)
        kept = scratch / wheel.name  # the rebuild may replace files beside W: compare a copy
        shutil.copyfile(wheel, kept)
        commit = commit_of(kept, scratch)
        _check_tree(tree, commit, allow_dirty)
        version = str(parse_wheel_name(kept).version)  # as the f-string in rebuild() wrote it
        rebuilt = rebuild(tree, version, build_dir, extra + (["--allow-dirty"] if allow_dirty else []), log)
        out = Outcome(str(wheel), str(rebuilt), commit, differing_members(kept, rebuilt))
    native = [m for m in out.differing if m.endswith(".so") or ".so." in m]
    if native and original_build is None:
        out.notes.append("no original build dir to compare objects with: pass --original-build-dir=DIR")
    for member in native:
        if original_build is not None:
            out.objects[member] = differing_objects(original_build, build_dir) or [
                "no object differs: the link or the staging step made the difference"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mxnet-release rebuild-check",
                                 description="Rebuild the commit a wheel names and compare the bytes.")
    ap.add_argument("--wheel", required=True, type=Path)
    ap.add_argument("--mxnet-src", required=True, type=Path)
    ap.add_argument("--build-dir", type=Path, help="where to rebuild (default: a new dir beside the tree's)")
    ap.add_argument("--original-build-dir", type=Path, help="the build dir that made the wheel")
    ap.add_argument("--allow-dirty", action="store_true")
    args, extra = ap.parse_known_args(argv)
    try:
        wheel = args.wheel.resolve()
        if not wheel.is_file() or not zipfile.is_zipfile(wheel):
            raise UsageError(f"--wheel {args.wheel}: not a wheel file; pass the path of a built .whl")
        try:
            parse_wheel_name(wheel)
        except WheelNameError as exc:
            raise UsageError(f"--wheel {args.wheel}: {exc}") from None
        tree = args.mxnet_src.resolve()
        # beside the tree, as every build dir is (preflight refuses one inside it)
        build_dir = (args.build_dir or Path(tempfile.mkdtemp(prefix=f"{tree.name}-build-rebuild-",
                                                             dir=tree.parent))).resolve()
        original = args.original_build_dir
        if original is None:
            guesses = [p for p in [*tree.parent.glob(f"{tree.name}-build*"), *tree.glob("build*")]
                       if (p / ".ninja_log").is_file() and p.resolve() != build_dir]
            original = guesses[0] if len(guesses) == 1 else None
        out = check(wheel, tree, build_dir, original.resolve() if original else None, extra,
                    args.allow_dirty)
    except UsageError as exc:
        print(f"mxnet-release rebuild-check: {exc}", file=sys.stderr)
        return exc.exit_code  # 4: refused before the rebuild
    except RuntimeError as exc:  # the rebuild itself could not be made: the host's fault, no verdict
        print(f"mxnet-release rebuild-check: {exc}", file=sys.stderr)
        return NOT_JUDGED_EXIT
    print("\n".join(out.lines()))
    return 0 if not out.differing else FAIL


if __name__ == "__main__":
    sys.exit(main())
