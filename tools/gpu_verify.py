"""Merge GPU runners' JSON reports: which release arch a GPU of that arch really verified.

    python -m tools.gpu_verify DIR [--wheel=W] [--cuda-arch LIST]

prints one row per release SASS arch and exits 1 naming the archs no GPU verified (or on which a
GPU failed), 2 on a usage error (a file that is not a report, a wheel that cannot be read). The
merge itself is build_steps.gpu_reports (the review page and the run's report use it too).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from build_steps.errors import FAIL, HarnessError, UsageError
from build_steps.gpu_reports import load_reports, merge, summary_lines, wheel_sass_archs
from build_steps.options import check_wheel_path
from build_steps.pinning import sha256_of


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.gpu_verify",
                                 description="Merge GPU runners' JSON reports: which release arch a GPU verified.")
    ap.add_argument("directory", type=Path, help="directory of --provenance-json reports")
    ap.add_argument("--wheel", type=Path, help="count only reports of this wheel (its sha256)")
    ap.add_argument("--cuda-arch", help="the arch list the wheel promises (default: the SASS archs of the "
                    "--wheel's fatbins, else the list the reports say the wheel was built with)")
    args = ap.parse_args(argv)
    try:
        sha, archs = None, None
        reports = load_reports(args.directory)
        if args.wheel is not None:
            # the harness's own --wheel check (exists, a zip, a wheel's name, one set of headers)
            args.wheel = check_wheel_path(str(args.wheel))
            sha = sha256_of(args.wheel)
            if args.cuda_arch is None:
                try:
                    archs = wheel_sass_archs(args.wheel)
                except HarnessError as exc:
                    raise UsageError(f"--wheel {args.wheel}: its fatbins cannot be read: {exc}") from None
                if not archs:
                    raise UsageError(f"--wheel {args.wheel}: no ELF in it carries GPU code (no .nv_fatbin): "
                                     "there is nothing a GPU could verify; is it the CPU wheel?")
        merged = merge(reports, sha, args.cuda_arch, archs)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(merged)))
    return 0 if merged.ok else FAIL


if __name__ == "__main__":
    sys.exit(main())
