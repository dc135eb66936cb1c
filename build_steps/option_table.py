"""Every command-line option of the harness, as data: the groups harness.plugins.cli_options declares to
pytest (before pytest looks for conftests), with their help. make_options (build_steps.options)
parses the first group's values into RunOptions."""
from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from .acceptance.suite import LANES
from .fast_compile import DEVICE_LEVELS
from .profile_data import PROFILES


class Option:
    """One ``parser.addoption(*flags, **kwargs)``."""

    def __init__(self, *flags: str, **kwargs: Any) -> None:
        self.flags, self.kwargs = flags, kwargs


class Group(NamedTuple):
    name: str
    description: str
    options: tuple[Option, ...]


RUN_OPTIONS = Group("mxnet-release", "MXNet CUDA 13 release harness", (
    Option("--wheel", metavar="PATH", help="audit/install this existing wheel instead of building one"),
    Option("--flavor", choices=tuple(PROFILES), default=None,
           help="release profile (default: macos for a macosx_* --wheel, else cuda)"),
    Option("--package-version", metavar="V", help="expected wheel version (default: --wheel-version when building)"),
    Option("--cmake-cache", metavar="PATH", help="CMakeCache.txt of the build the wheel came from"),
    Option("--mxnet-src", metavar="PATH", help="MXNet source tree (git state, commit stamp, build source)"),
    Option("--cuda-arch", metavar="LIST", help="MXNET_CUDA_ARCH list (default: the profile's, 8.0;8.6;8.9;9.0;10.0;12.0+PTX); "
           "'native': SASS for this host's GPUs only (nvidia-smi or the CUDA driver), a development build "
           "that cannot publish; a usage error on a host without a GPU"),
    Option("--provenance-json", metavar="PATH", help="write the provenance report as JSON here"),
    Option("--build-dir", metavar="DIR", help="CMake build tree, outside --mxnet-src (default: <mxnet-src>-build, or <mxnet-src>-build-cpu for --flavor cpu, beside the tree)"),
    Option("--jobs", type=int, metavar="N", help="parallel compile jobs (default: all cores)"),
    Option("--wheel-version", metavar="V", help="version to build (default 2.0.0+cu13.bw.<UTC date> / 2.0.0+cpu.linux.<date>)"),
    Option("--build-python", metavar="PY", help="interpreter for python -m build and the venv (default: this one)"),
    Option("--venv-dir", metavar="DIR", help="where to create the throwaway venv (default: a temp dir)"),
    Option("--keep-venv", action="store_true", help="keep the throwaway venv after the run"),
    Option("--find-links", action="append", metavar="DIR|URL", help="pip --find-links for the venv install (repeatable)"),
    Option("--index-url", metavar="URL", help="pip --index-url for the venv install"),
    Option("--no-index", action="store_true",
           help="pip --no-index for the venv installs: only --find-links (an offline host's wheelhouse)"),
    Option("--extra-requirement", dest="extra_requirements", action="append", metavar="REQ",
           help="extra requirement installed into the venv beside the wheel (repeatable), e.g. 'numpy<1.24'"),
    Option("--no-deps", action="store_true", help="install the wheel without its declared dependencies"),
    Option("--cuda-from-wheels", action="store_true", help="assemble the CUDA root from nvcc plus pip's nvidia-* wheels"),
    Option("--publish", action="store_true", help="tag and publish a GitHub release after every gate passed"),
    Option("--dry-run", action="store_true", help="with --publish: print what would be run, change nothing"),
    Option("--yes", action="store_true", help="with --publish: confirm the real publish"),
    Option("--remote", default="origin", help="git remote for tags (default: origin)"),
    Option("--cmake-define", dest="cmake_defines", action="append", metavar="KEY=VALUE",
           help="extra CMake definition for configure (repeatable); one that contradicts the release "
                "profile is allowed for development and makes the run unpublishable"),
    Option("--fast-compile", action="store_true",
           help="compile host code at -O0 instead of the release's -O3 (about half the compile time of "
                "a one-arch build; CPU operators run slower): a development build that cannot publish"),
    Option("--fast-compile-device", choices=DEVICE_LEVELS, metavar="LEVEL",
           help="with --fast-compile: compile device code at nvcc's -Ofc=LEVEL (max, mid, min) instead of "
                "fully optimised (the .cu objects' cicc and ptxas time; GPU kernels run slower by an "
                "unmeasured amount): a development build that cannot publish"),
    Option("--allow-dirty", action="store_true",
           help="build a tree with uncommitted tracked changes (development only: the run cannot publish)"),
    Option("--allow-untracked", action="store_true",
           help="build a tree with untracked files that are not ignored (development only: the run "
                "cannot publish; a CMake glob may compile them into the wheel)"),
    Option("--fresh", action="store_true",
           help="delete the build dir and configure anew (e.g. after changing the CUDA compiler or toolkit)"),
    Option("--compiler-launcher", choices=("auto", "sccache", "ccache", "none"), default="auto",
           help="compile through this compiler cache (auto: sccache, else ccache, else none); its "
                "location, size and remote storage come from SCCACHE_*/CCACHE_* (default: auto)"),
    Option("--glibc-floor", metavar="VERSIONS",
           help="oldest host the wheel must load on, replacing the profile's (Ubuntu 24.04: glibc 2.39, "
           "GLIBCXX_3.4.33, CXXABI_1.3.15): a glibc version (2.28) or GLIBC_2.28,GLIBCXX_3.4.25,CXXABI_1.3.11"),
    Option("--opencv-prefix", metavar="DIR",
           help="OpenCV installed in a prefix outside / (python -m tools.opencv_prefix): configure gets "
                "the fork's OPENCV_ROOT, and the bundle step resolves the closure from it first"),
    Option("--opencv", choices=("system", "built"), default=None,
           help="which OpenCV the wheel is built against and bundles: 'system' (the host's, or "
                "--opencv-prefix's) or 'built' (core, imgproc, imgcodecs built by the harness from "
                "pinned source with its own codecs, cached: build_steps.opencv_build; docs/opencv_build.md); "
                "default: the profile's (profiles.toml). With --wheel: which of the two the audited wheel "
                "bundles, the closure budget it is judged against"),
    Option("--allow-gpu-skips", action="store_true",
           help="a GPU gate that skips (no GPU on this host) does not fail the run"),
    Option("--no-sandbox", action="store_true",
           help="run the tree's build and the wheel's code without the bubblewrap sandbox (a host "
                "without user namespaces): a development run that cannot publish"),
    Option("--pass-env", dest="pass_env", action="append", metavar="NAME",
           help="pass this environment variable to the wheel's code (probes, acceptance shards, pip) "
                "beside the allow-list (repeatable); names that look like secrets are refused"),
))

ACCEPTANCE_OPTIONS = Group("mxnet-acceptance", "the fork's acceptance suite against the installed wheel", (
    Option("--shards", metavar="ID,ID", help="run only these acceptance shards (e.g. cpu_unittest,onnx_export_import)"),
    Option("--lanes", metavar="LANE,LANE", help=f"run only the shards of these lanes ({', '.join(LANES)})"),
    Option("--shards-file", metavar="PATH", help="shard data file (default: build_steps/acceptance/shards.toml, "
           "the fork's); a development option: a release run with it cannot publish"),
    Option("--shard-timeout", type=float, metavar="MIN", help="timeout of every shard in minutes (default: each shard's own)"),
    Option("--shard-workers", action="append", metavar="LANE=N",
           help="pytest-xdist workers inside the shards of LANE (the fork's PARALLEL_<LANE>; repeatable)"),
    Option("--shard-split", action="append", metavar="SHARD:K/N",
           help="run only part K of N of SHARD's tests (a deterministic split by test id: the N parts, "
                "run on the same wheel, cover the shard exactly; tools.gpu_verify adds them up; repeatable)"),
    Option("--acceptance-dir", metavar="DIR",
           help="where the shard logs and summary go (default: .harness/acceptance/<run> in the harness checkout)"),
))

REVIEW_OPTIONS = Group("mxnet-review", "MXNet release review page", (
    Option("--review-page", metavar="PATH", type=Path,
           help="write the run's release review page (one HTML file) here (default: the build's "
                "harness-logs/review.html, and beside --provenance-json as .html)"),
    Option("--gpu-reports", metavar="DIR", type=Path,
           help="GPU runners' --provenance-json reports: the review page's arch matrix shows which "
                "GPU verified each arch (as python -m tools.gpu_verify DIR merges them)"),
))

RELEASE_OPTIONS = Group("mxnet-verify", "the verify run's report and what it may hold", (
    Option("--release-report", metavar="PATH",
           help="with -m release and --publish: write the release report here once every gate "
                "of the release set passed; `mxnet-release publish --report=PATH --yes` then tags and "
                "releases (the verify run holds no credential)"),
    Option("--credential-for", dest="credential_for", action="append", metavar="NAME=STEP",
           help="a credential-shaped variable (GH_TOKEN, *_PASSWORD, ...) that build step STEP needs; "
                "a release run refuses any other in its environment (repeatable)"),
))

#: The groups, in --help's order; the first holds the run's options (RunOptions).
GROUPS = (RUN_OPTIONS, ACCEPTANCE_OPTIONS, REVIEW_OPTIONS, RELEASE_OPTIONS)
