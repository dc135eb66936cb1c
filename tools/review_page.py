"""Render the release review page of a run's JSON report:

    python -m tools.review_page REPORT.json [--wheel=W] [--gpu-reports=DIR] [--out=PAGE.html]

Exit 4 on a usage error, 1 when the page cannot be made. The page itself is
build_steps.report.review_page; the GPU runners' reports are merged by build_steps.gpu_reports.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from build_steps import gpu_reports
from build_steps.errors import FAIL, HarnessError, UsageError
from build_steps.options import check_wheel_path
from build_steps.pinning import sha256_of
from build_steps.report.review_page import own_gpu_runs, write_page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.review_page",
                                 description="Render the release review page of a run's JSON report.")
    ap.add_argument("report", type=Path, help="the run's --provenance-json report")
    ap.add_argument("--wheel", type=Path, help="the wheel the report is of (its parts and sizes)")
    ap.add_argument("--gpu-reports", type=Path, metavar="DIR",
                    help="GPU runners' reports (as for python -m tools.gpu_verify): the arch matrix's "
                         "verified column")
    ap.add_argument("--out", type=Path, help="where to write the page (default: REPORT with .html)")
    args = ap.parse_args(argv)
    try:
        try:
            doc = json.loads(args.report.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"{args.report}: not a readable JSON report ({exc}); write one with "
                             "pytest ... --provenance-json=PATH") from None
        sha = (doc.get("wheel") or {}).get("sha256")
        if args.wheel is not None:
            # the harness's own --wheel check (exists, a zip, a wheel's name, one set of headers)
            args.wheel = check_wheel_path(str(args.wheel))
            if sha and sha256_of(args.wheel) != sha:
                raise UsageError(f"--wheel {args.wheel} is not the wheel of {args.report} (another sha256): "
                                 "pass the wheel the report was written for")
        arch = gpu_reports.report_arch(doc)  # the list the wheel was built with
        merged = own_gpu_runs(doc, sha, arch)
        if args.gpu_reports is not None:
            reports = gpu_reports.load_reports(args.gpu_reports)
            # The report itself counts when it ran GPU gates, once (it may lie in that directory).
            if merged is not None and args.report.resolve() not in {p.resolve() for p, _ in reports}:
                reports.append((args.report, doc))
            merged = gpu_reports.merge(reports, sha, arch)
        doc["review"] = {**(doc.get("review") or {}), "rendered_from": str(args.report), "written": []}
        out = write_page(args.out or args.report.with_suffix(".html"), doc, args.wheel, merged)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code  # 4: refused
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return FAIL
    print(f"review page written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
