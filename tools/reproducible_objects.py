"""Compile chosen objects of a real MXNet tree twice, in two build dirs with two TMPDIRs, through
the harness's configure and compiler-launcher chain, and compare their bytes.

    python -m tools.reproducible_objects --tree=/tmp/fork/mxnet --work=/tmp/repro --count=40 --cu=3

Each build dir is configured by build_steps.configure with the harness's reproducible defines
(the deterministic_compile prefix, ar D) and the "none" cache tool, so both compiles are real
compiles (a cache hit in the second would prove nothing). The CUDA root comes from
``--cuda-from-wheels``'s assembly (the CUDA_WHEELS_FIND_LINKS directory, offline). Writes
``result.json`` under --work: each object's sha256 in both dirs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from build_steps import compile as compile_step, configure, cuda_root, launcher, reproducible
from build_steps.profile_data import PROFILES
from build_steps.arch import make_arch
from build_steps.errors import FAIL


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def choose_objects(tree: Path, build: Path, count: int, cu: int) -> list:
    """The smallest sources' object targets: ``count`` in all, ``cu`` of them .cu."""
    out = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True,
                         text=True, check=True).stdout
    objs = [line.split(":")[0] for line in out.splitlines()
            if line.startswith("CMakeFiles/mxnet.dir/src/") and line.split(":")[0].endswith(".o")]

    def size(obj):
        rel = obj[len("CMakeFiles/mxnet.dir/"):-2]
        p = tree / rel
        return p.stat().st_size if p.is_file() else 1 << 40
    cus = sorted((o for o in objs if o.endswith(".cu.o")), key=size)[:cu]
    ccs = sorted((o for o in objs if o.endswith(".cc.o")), key=size)[:count - len(cus)]
    return sorted(ccs + cus)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--cu", type=int, default=3)
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--find-links", default="/opt/pypi-more/files")
    ap.add_argument("--objects", type=Path, help="a file naming the object targets, one a line "
                    "(default: the smallest sources')")
    args = ap.parse_args(argv)
    tree, work = args.tree.resolve(), args.work.resolve()
    profile = PROFILES["cuda"]
    # Unlocked, from this host's mirror: the objects' bytes do not depend on the libraries' versions.
    root = cuda_root.assemble_cuda_root(python=sys.executable, find_links=(args.find_links,),
                                        requirements=profile.cuda.build_wheels, progress=sys.stderr,
                                        stack=profile.cuda)
    tool = launcher.choose("none")
    result = {"tree": str(tree), "arch": args.arch, "builds": {}}
    objects = None
    for name in ("one", "two"):
        build, tmp = work / f"build-{name}", work / f"tmp-{name}"
        tmp.mkdir(parents=True, exist_ok=True)
        defs = {**root.cmake_args, **reproducible.ARCHIVE_DEFINES,
                **launcher.cmake_defines(tool, reproducible.launcher_prefix(tree, build))}
        start = time.monotonic()
        configure.configure(tree, build, profile, make_arch(profile, args.arch, {}), build / "harness-logs",
                            extra_defs=defs, env=root.env)
        print(f"[{name}] configured in {time.monotonic() - start:.0f}s", file=sys.stderr, flush=True)
        if objects is None and args.objects:
            objects = [line.strip() for line in args.objects.read_text().splitlines() if line.strip()]
        objects = objects or choose_objects(tree, build, args.count, args.cu)
        env = {**root.env, **reproducible.compile_env(tree), "TMPDIR": str(tmp)}
        start = time.monotonic()
        compile_step.compile_mxnet(build, 2, build / "harness-logs", target=objects, env=env,
                                   library_name=objects[0], launcher=tool, src=tree)
        result["builds"][name] = {"build_dir": str(build), "seconds": round(time.monotonic() - start, 1),
                                  "objects": {o: _sha(build / o) for o in objects}}
        print(f"[{name}] {len(objects)} objects in {time.monotonic() - start:.0f}s", file=sys.stderr, flush=True)
    one, two = (result["builds"][n]["objects"] for n in ("one", "two"))
    result["differ"] = [o for o in objects if one[o] != two[o]]
    result["identical"] = len(objects) - len(result["differ"])
    (work / "result.json").write_text(json.dumps(result, indent=1))
    print(f"{result['identical']}/{len(objects)} objects byte-identical; differ: {result['differ']}")
    return 0 if not result["differ"] else FAIL


if __name__ == "__main__":
    sys.exit(main())
