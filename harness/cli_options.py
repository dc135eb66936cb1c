"""Every command-line option of the harness, declared in one plugin that pytest.ini loads with
``-p`` (before pytest looks for conftests).

Why so early: pytest picks the conftests to import from the command line's positional arguments
before it reads the root conftest. An option it does not know yet takes no value, so in
``--mxnet-src /path/to/tree`` the tree was a positional argument and its ``conftest.py`` was imported
into the harness (issue 29). Declared here, every option's value is parsed as its value, in
``mxnet-release`` and plain ``python -m pytest`` alike, whatever the spelling. The root conftest
lists this module too, so a run given another ini still has the options (and harness.plugin_guard
then refuses any conftest that is not the harness's).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from build_steps.acceptance import LANES
from build_steps.fast_compile import DEVICE_LEVELS
from build_steps.profile_data import PROFILES

#: The dest names of the run's options (the first group): make_options receives exactly these.
OPTION_DESTS: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    _run_options(parser)
    _acceptance_options(parser)
    _review_options(parser)
    _release_options(parser)


def _run_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("mxnet-release", "MXNet CUDA 13 release harness")
    g.addoption("--wheel", metavar="PATH", help="audit/install this existing wheel instead of building one")
    g.addoption("--flavor", choices=tuple(PROFILES), default=None,
                help="release profile (default: macos for a macosx_* --wheel, else cuda)")
    g.addoption("--package-version", metavar="V", help="expected wheel version (default: --wheel-version when building)")
    g.addoption("--cmake-cache", metavar="PATH", help="CMakeCache.txt of the build the wheel came from")
    g.addoption("--mxnet-src", metavar="PATH", help="MXNet source tree (git state, commit stamp, build source)")
    g.addoption("--cuda-arch", metavar="LIST", help="MXNET_CUDA_ARCH list (default: the profile's, 8.0;8.6;8.9;9.0;10.0;12.0+PTX); "
                "'native': SASS for this host's GPUs only (nvidia-smi or the CUDA driver), a development build "
                "that cannot publish; a usage error on a host without a GPU")
    g.addoption("--provenance-json", metavar="PATH", help="write the provenance report as JSON here")
    g.addoption("--build-dir", metavar="DIR", help="CMake build tree, outside --mxnet-src (default: <mxnet-src>-build, or <mxnet-src>-build-cpu for --flavor cpu, beside the tree)")
    g.addoption("--jobs", type=int, metavar="N", help="parallel compile jobs (default: all cores)")
    g.addoption("--wheel-version", metavar="V", help="version to build (default 2.0.0+cu13.bw.<UTC date> / 2.0.0+cpu.linux.<date>)")
    g.addoption("--build-python", metavar="PY", help="interpreter for python -m build and the venv (default: this one)")
    g.addoption("--venv-dir", metavar="DIR", help="where to create the throwaway venv (default: a temp dir)")
    g.addoption("--keep-venv", action="store_true", help="keep the throwaway venv after the run")
    g.addoption("--find-links", action="append", metavar="DIR|URL", help="pip --find-links for the venv install (repeatable)")
    g.addoption("--index-url", metavar="URL", help="pip --index-url for the venv install")
    g.addoption("--no-index", action="store_true",
                help="pip --no-index for the venv installs: only --find-links (an offline host's wheelhouse)")
    g.addoption("--extra-requirement", dest="extra_requirements", action="append", metavar="REQ",
                help="extra requirement installed into the venv beside the wheel (repeatable), e.g. 'numpy<1.24'")
    g.addoption("--no-deps", action="store_true", help="install the wheel without its declared dependencies")
    g.addoption("--cuda-from-wheels", action="store_true", help="assemble the CUDA root from nvcc plus pip's nvidia-* wheels")
    g.addoption("--publish", action="store_true", help="tag and publish a GitHub release after every gate passed")
    g.addoption("--dry-run", action="store_true", help="with --publish: print what would be run, change nothing")
    g.addoption("--yes", action="store_true", help="with --publish: confirm the real publish")
    g.addoption("--remote", default="origin", help="git remote for tags (default: origin)")
    g.addoption("--cmake-define", dest="cmake_defines", action="append", metavar="KEY=VALUE",
                help="extra CMake definition for configure (repeatable); one that contradicts the release "
                     "profile is allowed for development and makes the run unpublishable")
    g.addoption("--fast-compile", action="store_true",
                help="compile host code at -O0 instead of the release's -O3 (about half the compile time of "
                     "a one-arch build; CPU operators run slower): a development build that cannot publish")
    g.addoption("--fast-compile-device", choices=DEVICE_LEVELS, metavar="LEVEL",
                help="with --fast-compile: compile device code at nvcc's -Ofc=LEVEL (max, mid, min) instead of "
                     "fully optimised (the .cu objects' cicc and ptxas time; GPU kernels run slower by an "
                     "unmeasured amount): a development build that cannot publish")
    g.addoption("--allow-dirty", action="store_true",
                help="build a tree with uncommitted tracked changes (development only: the run cannot publish)")
    g.addoption("--allow-untracked", action="store_true",
                help="build a tree with untracked files that are not ignored (development only: the run "
                     "cannot publish; a CMake glob may compile them into the wheel)")
    g.addoption("--fresh", action="store_true",
                help="delete the build dir and configure anew (e.g. after changing the CUDA compiler or toolkit)")
    g.addoption("--compiler-launcher", choices=("auto", "sccache", "ccache", "none"), default="auto",
                help="compile through this compiler cache (auto: sccache, else ccache, else none); its "
                     "location, size and remote storage come from SCCACHE_*/CCACHE_* (default: auto)")
    g.addoption("--glibc-floor", metavar="VERSIONS",
                help="oldest host the wheel must load on, replacing the profile's (Ubuntu 24.04: glibc 2.39, "
                "GLIBCXX_3.4.33, CXXABI_1.3.15): a glibc version (2.28) or GLIBC_2.28,GLIBCXX_3.4.25,CXXABI_1.3.11")
    g.addoption("--opencv-prefix", metavar="DIR",
                help="OpenCV installed in a prefix outside / (python -m tools.opencv_prefix): configure gets "
                     "the fork's OPENCV_ROOT, and the bundle step resolves the closure from it first")
    g.addoption("--opencv", choices=("system", "built"), default=None,
                help="which OpenCV the wheel is built against and bundles: 'system' (the host's, or "
                     "--opencv-prefix's) or 'built' (core, imgproc, imgcodecs built by the harness from "
                     "pinned source with its own codecs, cached: build_steps.opencv_build; docs/opencv_build.md); "
                     "default: the profile's (profiles.toml). With --wheel: which of the two the audited wheel "
                     "bundles, the closure budget it is judged against")
    g.addoption("--allow-gpu-skips", action="store_true",
                help="a GPU gate that skips (no GPU on this host) does not fail the run")
    g.addoption("--no-sandbox", action="store_true",
                help="run the tree's build and the wheel's code without the bubblewrap sandbox (a host "
                     "without user namespaces): a development run that cannot publish")
    g.addoption("--pass-env", dest="pass_env", action="append", metavar="NAME",
                help="pass this environment variable to the wheel's code (probes, acceptance shards, pip) "
                     "beside the allow-list (repeatable); names that look like secrets are refused")
    OPTION_DESTS[:] = [opt.dest for opt in g.options]


def _acceptance_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("mxnet-acceptance", "the fork's acceptance suite against the installed wheel")
    g.addoption("--shards", metavar="ID,ID", help="run only these acceptance shards (e.g. cpu_unittest,onnx_export_import)")
    g.addoption("--lanes", metavar="LANE,LANE", help=f"run only the shards of these lanes ({', '.join(LANES)})")
    g.addoption("--shards-file", metavar="PATH", help="shard data file (default: build_steps/acceptance_shards.toml, "
                "the fork's); a development option: a release run with it cannot publish")
    g.addoption("--shard-timeout", type=float, metavar="MIN", help="timeout of every shard in minutes (default: each shard's own)")
    g.addoption("--shard-workers", action="append", metavar="LANE=N",
                help="pytest-xdist workers inside the shards of LANE (the fork's PARALLEL_<LANE>; repeatable)")
    g.addoption("--shard-split", action="append", metavar="SHARD:K/N",
                help="run only part K of N of SHARD's tests (a deterministic split by test id: the N parts, "
                     "run on the same wheel, cover the shard exactly; tools.gpu_verify adds them up; repeatable)")
    g.addoption("--acceptance-dir", metavar="DIR",
                help="where the shard logs and summary go (default: .harness/acceptance/<run> in the harness checkout)")


def _review_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("mxnet-review", "MXNet release review page")
    g.addoption("--review-page", metavar="PATH", type=Path,
                help="write the run's release review page (one HTML file) here (default: the build's "
                     "harness-logs/review.html, and beside --provenance-json as .html)")
    g.addoption("--gpu-reports", metavar="DIR", type=Path,
                help="GPU runners' --provenance-json reports: the review page's arch matrix shows which "
                     "GPU verified each arch (as python -m tools.gpu_verify DIR merges them)")


def _release_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("mxnet-verify", "the verify run's report and what it may hold")
    g.addoption("--release-report", metavar="PATH",
                help="with -m release and --publish: write the release report here once every gate "
                     "of the release set passed; `mxnet-release publish --report=PATH --yes` then tags and "
                     "releases (the verify run holds no credential)")
    g.addoption("--credential-for", dest="credential_for", action="append", metavar="NAME=STEP",
                help="a credential-shaped variable (GH_TOKEN, *_PASSWORD, ...) that build step STEP needs; "
                     "a release run refuses any other in its environment (repeatable)")
