"""``--cmake-define`` overrides judged against the release profile.

An override is how a developer builds what the release does not (cuDNN off to chase a bug, one
arch to save an hour). It reaches CMake, the configure step verifies the cache against the
profile *with* the override, and this module says which release promise each override breaks,
so the run can build but cannot publish.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .development_settings import cmake_define_reason
from .readers import cmake_cache
from .fast_compile import FAST_COMPILE_LEVEL, RELEASE_HOST_OPT
from .arch import missing_release_archs

if TYPE_CHECKING:  # annotations only: options imports nothing of this module, but the run's options are read here
    from .options import RunOptions

#: What the wheel promises its users when a toggle of the profile is ON, in their words.
TOGGLE_PROMISES = {
    "USE_CUDA": "GPU support (the cu13 wheel runs on NVIDIA GPUs)",
    "USE_CUDNN": "cuDNN convolutions and RNNs",
    "USE_NCCL": "NCCL multi-GPU communication",
    "USE_ONEDNN": "oneDNN CPU kernels",
    "USE_OPENCV": "OpenCV image decoding (mx.image, gluon vision transforms)",
    "USE_OPENMP": "OpenMP-parallel CPU operators",
}


def broken_promises(options: RunOptions) -> list[str]:
    """One sentence per ``--cmake-define`` override of the run (``options``: RunOptions) that
    contradicts the profile: the define and the promise."""
    broken = []
    profile = options.profile
    for key, value in options.cmake_defines.items():
        if key == "MXNET_CUDA_ARCH":
            # make_arch parses a CUDA profile's MXNET_CUDA_ARCH define into the override
            override = options.cuda_arch.override
            left_out = (missing_release_archs(profile, override)
                        if profile.is_cuda and override is not None else [])
            if left_out:
                broken.append(f"-DMXNET_CUDA_ARCH={value} leaves out {', '.join(left_out)}: breaks the "
                              f"promise of kernels for every GPU of the release list {profile.cuda_arch}")
            elif not profile.is_cuda or value != profile.cuda_arch:
                broken.append(f"-DMXNET_CUDA_ARCH={value} (a development setting on the {profile.name} "
                              f"flavor): {cmake_define_reason(key, profile)}")
            continue
        if key not in profile.configure_flags:
            why = cmake_define_reason(key, profile)
            if why:
                broken.append(f"-D{key}={value} (a development setting): {why}")
            continue
        want = profile.configure_flags[key]
        want_bool, have_bool = cmake_cache.to_bool(want), cmake_cache.to_bool(value)
        same = (want_bool == have_bool) if want_bool is not None and have_bool is not None else str(want) == value
        if same:
            continue
        promise = TOGGLE_PROMISES.get(key)
        broken.append(f"-D{key}={value} (the {profile.name} profile sets {want})"
                      + (f": breaks the promise of {promise}" if promise and want_bool else
                         ": the release is built with the profile's value"))
    return broken


def development_option_promises(options: RunOptions) -> list[str]:
    """One sentence per development shorthand of the run (``--cuda-arch=native``, ``--fast-compile``):
    the option as written and the release promise it breaks. Like an override, each builds and
    installs but cannot publish."""
    broken = []
    profile = options.profile
    arch = options.cuda_arch
    if arch.native_gpus:
        left_out = missing_release_archs(profile, arch.requested) if profile.cuda_arch else []
        broken.append(f"--cuda-arch=native built {arch.requested.text} only (for "
                      f"{', '.join(arch.native_gpus)})"
                      + (f", leaving out {', '.join(left_out)}" if left_out else "")
                      + f": breaks the promise of kernels for every GPU of the release list {profile.cuda_arch}")
    if options.fast_compile:
        broken.append(f"--fast-compile built host code at {FAST_COMPILE_LEVEL} (the release: "
                      f"{RELEASE_HOST_OPT}): breaks the promise of the release's optimised CPU operators")
    broken += [f"{written} (a development option): {why}" for written, why in options.development_settings]
    return broken
