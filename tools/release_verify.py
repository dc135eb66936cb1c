"""Judge one flavor's whole release set over several runs' reports on identical bytes (issue 45).

    python -m tools.release_verify DIR --flavor=cpu [--wheel=W]
    python -m tools.release_verify DIR --flavor=cpu --wheel=W --mxnet-src=TREE [--remote=origin] --release-report=R

prints one row per gate of the flavor's release set (verdict, which report, host and date; a
shard's passed/failed/skipped counts and seconds) and ``RELEASE <wheel>: PASS (N/N) ...`` or
``FAIL (n/N) ...`` naming each gate that failed or did not run. Exit 0 PASS, 1 FAIL, 3 not judged
(a gate the host could not judge), 2 usage (a file that is not a report, reports of different
wheels without --wheel, a report of another harness's release set). The rules are
build_steps.release_parts's.

With ``--release-report=R`` a PASS of the whole set on W's bytes also writes the signed release
report ``mxnet-release publish --report=R`` publishes from, as a one-run release's
``--publish --release-report=R`` does (build_steps.release_parts.write_release_report: the same
checks of the tree TREE, its remote's tags and the key); any other verdict writes nothing and
exits as above; a refused precondition (a development run, a taken tag, HEAD not the wheel's
commit) writes nothing and exits 4, as the publish step's refusals do.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from build_steps.errors import HarnessError, UsageError, exit_status
from build_steps.options import check_wheel_path
from build_steps.pinning import sha256_of
from build_steps.release_manifest import FLAVORS
from build_steps.release_parts import PASS, judge, load_parts, summary_lines, write_release_report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.release_verify",
                                 description="Judge a flavor's whole release set over several runs' "
                                             "--provenance-json reports of one wheel.")
    ap.add_argument("directory", type=Path, help="directory of the runs' --provenance-json reports")
    ap.add_argument("--flavor", required=True, choices=FLAVORS, help="the flavor whose release set is judged")
    ap.add_argument("--wheel", type=Path, help="count only the reports of this wheel file (its sha256)")
    ap.add_argument("--release-report", type=Path,
                    help="on a PASS, write the signed release report mxnet-release publish --report publishes "
                         "from (needs --wheel and --mxnet-src)")
    ap.add_argument("--mxnet-src", type=Path, help="the checkout the wheel was built from (the tag goes on its HEAD)")
    ap.add_argument("--remote", default="origin", help="the git remote the tag is pushed to (default origin)")
    args = ap.parse_args(argv)
    try:
        if args.release_report is not None and (args.wheel is None or args.mxnet_src is None):
            raise UsageError("--release-report needs --wheel=W (the bytes published) and --mxnet-src=TREE "
                             "(the checkout W was built from, where the tag is made)")
        if args.mxnet_src is not None and args.release_report is None:
            raise UsageError("--mxnet-src only applies together with --release-report")
        sha, name, wheel = None, None, None
        if args.wheel is not None:
            # the harness's own --wheel check (exists, a zip, a wheel's name, one set of headers)
            wheel = check_wheel_path(str(args.wheel))
            sha, name = sha256_of(wheel), wheel.name
        judgement = judge(load_parts(args.directory), args.flavor, sha, wheel=name)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(judgement)))
    if args.release_report is None or wheel is None:
        return judgement.exit_code
    if judgement.state != PASS:
        print(f"release report NOT written: the {args.flavor} release set is {judgement.state} on "
              f"{wheel.name}; only a PASS of the whole set publishes", file=sys.stderr)
        return judgement.exit_code
    try:
        lines = write_release_report(judgement, wheel, args.release_report, args.mxnet_src, args.remote)
    except HarnessError as exc:
        print(str(exc) if str(exc).startswith("release report NOT written") else f"release report NOT written: {exc}",
              file=sys.stderr)
        return exit_status(exc)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
