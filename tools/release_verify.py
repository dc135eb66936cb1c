"""Judge one flavor's whole release set over several runs' reports on identical bytes (issue 45).

    python -m tools.release_verify DIR --flavor=cpu [--wheel=W]

prints one row per gate of the flavor's release set (verdict, which report, host and date; a
shard's passed/failed/skipped counts and seconds) and ``RELEASE <wheel>: PASS (N/N) ...`` or
``FAIL (n/N) ...`` naming each gate that failed or did not run. Exit 0 PASS, 1 FAIL, 3 not judged
(a gate the host could not judge), 2 usage (a file that is not a report, reports of different
wheels without --wheel, a report of another harness's release set). The rules are
build_steps.release_parts's.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from build_steps.errors import UsageError
from build_steps.options import check_wheel_path
from build_steps.pinning import sha256_of
from build_steps.release_manifest import FLAVORS
from build_steps.release_parts import judge, load_parts, summary_lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.release_verify",
                                 description="Judge a flavor's whole release set over several runs' "
                                             "--provenance-json reports of one wheel.")
    ap.add_argument("directory", type=Path, help="directory of the runs' --provenance-json reports")
    ap.add_argument("--flavor", required=True, choices=FLAVORS, help="the flavor whose release set is judged")
    ap.add_argument("--wheel", type=Path, help="count only the reports of this wheel file (its sha256)")
    args = ap.parse_args(argv)
    try:
        sha, name = None, None
        if args.wheel is not None:
            # the harness's own --wheel check (exists, a zip, a wheel's name, one set of headers)
            wheel = check_wheel_path(str(args.wheel))
            sha, name = sha256_of(wheel), wheel.name
        judgement = judge(load_parts(args.directory), args.flavor, sha, wheel=name)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(judgement)))
    return judgement.exit_code


if __name__ == "__main__":
    sys.exit(main())
