"""``python -m tools.cuda_stack_args FLAVOR``: the flavor's cuBLAS probe arguments (its CUDA stack from
build_steps/profiles.toml), shell-quoted, for a GPU host whose python lacks the harness's
dependencies: gpu/cublas_check.sh reads them from CUBLAS_STACK_ARGS there."""
from __future__ import annotations

import shlex
import sys

from build_steps.cuda_stack import cublas_probe_args
from build_steps.errors import UsageError
from build_steps.profile_data import get_profile


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tools.cuda_stack_args FLAVOR", file=sys.stderr)
        return 2
    try:
        profile = get_profile(args[0])
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(shlex.join(cublas_probe_args(profile)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
