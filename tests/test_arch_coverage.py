"""CUDA arch coverage, read from the binary's .nv_fatbin headers (not from the build config)."""
import pytest

from build_steps.profiles import ARCH_GPU_FAMILIES

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def _gpus(arch):
    return ARCH_GPU_FAMILIES.get(arch, "GPUs of that generation")


def _fatbin(audit, libmxnet_info):
    if audit.fatbin_error:
        pytest.fail(audit.fatbin_error, pytrace=False)
    return audit.fatbin


def test_sass_for_every_requested_arch(audit, libmxnet_info, options, profile):
    fat = _fatbin(audit, libmxnet_info)
    if not profile.is_cuda:
        if fat is not None:
            pytest.fail(f"the CPU wheel's libmxnet.so carries a .nv_fatbin ({', '.join(fat['sass'])}): "
                        "it was built with CUDA; reconfigure the CPU build dir with USE_CUDA=OFF", pytrace=False)
        return
    if fat is None:
        pytest.fail("libmxnet.so has no .nv_fatbin section: no CUDA kernels were compiled in; "
                    "reconfigure with USE_CUDA=ON and rebuild", pytrace=False)
    missing = [a for a in options.cuda_arch.sass if a not in fat["sass_archs"]]
    if missing:
        lost = "; ".join(f"sm_{a}: {_gpus(a)}" for a in missing)
        pytest.fail(f"libmxnet.so has no SASS for {', '.join(f'sm_{a}' for a in missing)} (it carries "
                    f"{' '.join(fat['sass'])}): these GPUs lose native code ({lost}); rebuild with "
                    f"MXNET_CUDA_ARCH={options.cuda_arch_text!r} (reconfigure: the cache may hold an "
                    "older arch list)", pytrace=False)


def test_ptx_for_ptx_archs(audit, libmxnet_info, options, profile):
    fat = _fatbin(audit, libmxnet_info) or {"ptx_archs": [], "ptx": []}
    missing = [a for a in options.cuda_arch.ptx if a not in fat["ptx_archs"]]
    if missing:
        pytest.fail(f"libmxnet.so has no PTX for {', '.join(f'compute_{a}' for a in missing)} (it carries "
                    f"{' '.join(fat['ptx']) or 'no PTX'}): GPUs newer than sm_{max(missing)} cannot JIT "
                    f"the kernels and fail with 'no kernel image'; rebuild with '+PTX' on the top arch of "
                    f"MXNET_CUDA_ARCH ({options.cuda_arch_text!r})", pytrace=False)
    if not profile.is_cuda:
        assert not fat["ptx"], "the CPU wheel carries PTX"


def test_fatbin_containers_consistent(audit, libmxnet_info, options):
    # The union is the SASS gate's; this one catches a module compiled with a narrower arch list
    # (its kernels would be missing on that arch). Judged on the requested archs that other
    # containers do carry: a linked-in library with extra archs is no failure, and an arch missing
    # everywhere is the SASS gate's failure, not a second one here. PTX is judged on the union
    # only: one .cu can yield several containers of which only one carries PTX.
    fat = _fatbin(audit, libmxnet_info)
    if fat is None:
        return
    report = audit._fatbin_obj
    required = set(options.cuda_arch.sass) & set(report.sass_archs)
    bad = report.containers_missing(required)
    if bad:
        per = report.container_sass()
        detail = "; ".join(f"container {c} lacks {', '.join(f'sm_{a}' for a in sorted(required - per[c]))}"
                           for c in bad[:5])
        pytest.fail(f"{len(bad)} of {len(per)} fatbin containers carry SASS for fewer archs than the rest "
                    f"({detail}): part of libmxnet.so was compiled with a different arch list; kernels in "
                    "it will be missing on those GPUs. Rebuild from a clean build dir with one "
                    "MXNET_CUDA_ARCH", pytrace=False)
