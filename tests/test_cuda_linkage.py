"""CUDA linkage: the driver from the host, cuDNN/NCCL from pip, found through exact RUNPATH entries."""
import re

import pytest

from build_steps.readers.elf import normalize_origin

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]

_CUDA = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn\w*|nccl|nvrtc|cufft|cusolver|cusparse|curand|nvJitLink)\.so")


def test_cuda_driver_linkage(libmxnet_info, profile):
    if profile.is_cuda:
        if "libcuda.so.1" not in libmxnet_info.needed:
            pytest.fail("libmxnet.so has no DT_NEEDED for libcuda.so.1: CMakeLists.txt must link "
                        "CUDA::cuda_driver; fix the link and rebuild (never patchelf --add-needed: it "
                        "corrupts the ~1 GB library)", pytrace=False)
    else:
        cuda = [n for n in libmxnet_info.needed if _CUDA.match(n)]
        if cuda:
            pytest.fail(f"CPU wheel libmxnet.so unexpectedly links CUDA libraries: {', '.join(cuda)}; "
                        "reconfigure the CPU build dir with USE_CUDA=OFF (delete its CMakeCache.txt)",
                        pytrace=False)


def test_cudnn_nccl_needed(libmxnet_info, profile):
    cudnn = [n for n in libmxnet_info.needed if n.startswith("libcudnn")]
    nccl = [n for n in libmxnet_info.needed if n.startswith("libnccl")]
    problems = []
    for key, found, lib, pkg in (("USE_CUDNN", cudnn, "libcudnn", "libcudnn9-dev-cuda-13"),
                                 ("USE_NCCL", nccl, "libnccl", "libnccl-dev")):
        if profile.features[key] and not found:
            problems.append(f"libmxnet.so has no {lib} NEEDED entries: CMake silently built without "
                            f"{key[4:]} (install {pkg}, reconfigure with {key}=ON and rebuild)")
        if not profile.features[key] and found:
            problems.append(f"libmxnet.so has {lib} NEEDED entries although the {profile.name} profile "
                            f"has {key}=OFF: {', '.join(found)}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_libmxnet_runpath(libmxnet_info, profile):
    path = [normalize_origin(e) for e in libmxnet_info.search_path]
    want = list(profile.runpath)
    if path[: len(want)] != want:
        missing = [e for e in want if e not in path]
        what = (f"lacks {', '.join(missing)}" if missing else "has them in another order")
        pytest.fail(f"libmxnet.so {libmxnet_info.search_tag or 'RUNPATH'} is {':'.join(path) or '(none)'}; it "
                    f"{what} (the {profile.name} profile wants {':'.join(want)} first), so the bundled "
                    "OpenCV or the pip-installed cuDNN/NCCL/cuBLAS will not be found; set it with "
                    "patchelf --set-rpath in the stage step", pytrace=False)
