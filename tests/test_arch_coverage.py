"""CUDA arch coverage, read from the binaries' .nv_fatbin headers (not from the build config).

Every ELF of the wheel that carries GPU code is judged, not libmxnet.so alone: a second CUDA
library's kernels fail with "no kernel image" just the same. Suffixed SASS follows CUDA 13's
compatibility rules (arch.SASS_VARIANTS): ``sm_100a`` runs on compute capability 10.0 only and
does not keep the generic ``sm_100`` promise; a family target (``sm_100f``) keeps it for its family.
"""
import pytest

from build_steps.arch import ARCH_GPU_FAMILIES, SASS_VARIANTS, sass_keeps_promise, sass_runs_on, split_sass_name
from build_steps.profile_data import ptx_isa_problem
from build_steps.readers.audit import LIBMXNET

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def _gpus(arch):
    return ARCH_GPU_FAMILIES.get(arch, "GPUs of that generation")


def _libraries(audit, libmxnet_info):
    """member -> fatbin JSON of every library with GPU code; a fatbin that cannot be read fails."""
    errors = dict(audit.fatbin_errors or {})
    if audit.fatbin_error:
        errors.setdefault(LIBMXNET, audit.fatbin_error)
    if errors:
        pytest.fail("\n".join(errors.values()), pytrace=False)
    return dict(audit.fatbins or ({LIBMXNET: audit.fatbin} if audit.fatbin else {}))


def _why_not(names, wanted):
    """Why the suffixed SASS of ``wanted``'s arch, if any, does not keep the promise."""
    notes = []
    for name in names:
        arch, variant = split_sass_name(name)
        if arch == wanted and variant:
            ccs = ", ".join(f"{c // 10}.{c % 10}" for c in sorted(sass_runs_on(arch, variant)))
            promised = ", ".join(f"{c // 10}.{c % 10}" for c in sorted(sass_runs_on(wanted, "")))
            notes.append(f"{name} runs on compute capability {ccs} only ({SASS_VARIANTS[variant]['runs_on']}), "
                         f"sm_{wanted} promises {promised} and later GPUs of that line")
    return f" ({'; '.join(notes)})" if notes else ""


def test_sass_for_every_requested_arch(audit, libmxnet_info, options, profile):
    libs = _libraries(audit, libmxnet_info)
    if not profile.is_cuda:
        if libs:
            pytest.fail("the CPU wheel carries GPU code: " + "; ".join(
                f"{m} has a .nv_fatbin ({', '.join(f['sass'])})" for m, f in libs.items())
                + ": it was built with CUDA; reconfigure the CPU build dir with USE_CUDA=OFF", pytrace=False)
        return
    if LIBMXNET not in libs:
        pytest.fail("libmxnet.so has no .nv_fatbin section: no CUDA kernels were compiled in; "
                    "reconfigure with USE_CUDA=ON and rebuild", pytrace=False)
    problems = []
    for member, fat in libs.items():
        names = fat["sass"]
        missing = [a for a in options.cuda_arch.requested.sass
                   if not any(sass_keeps_promise(*split_sass_name(n), a) for n in names)]
        if missing:
            lost = "; ".join(f"sm_{a}: {_gpus(a)}{_why_not(names, a)}" for a in missing)
            problems.append(f"{member} has no SASS for {', '.join(f'sm_{a}' for a in missing)} (it carries "
                            f"{' '.join(names) or 'none'}): these GPUs lose native code ({lost})")
    if problems:
        pytest.fail("\n".join(problems) + f"\nfix: rebuild with MXNET_CUDA_ARCH={options.cuda_arch.requested.text!r} "
                    "(generic targets, no 'a' suffix; reconfigure: the cache may hold an older arch list)",
                    pytrace=False)


def test_ptx_for_ptx_archs(audit, libmxnet_info, options, profile):
    libs = _libraries(audit, libmxnet_info) or {LIBMXNET: {"ptx_archs": [], "ptx": [], "sass": []}}
    problems = []
    for member, fat in libs.items():
        generic = {split_sass_name(n)[0] for n in fat["ptx"] if not split_sass_name(n)[1]}
        missing = [a for a in options.cuda_arch.requested.ptx if a not in generic]
        if missing:
            problems.append(f"{member} has no PTX for {', '.join(f'compute_{a}' for a in missing)} (it carries "
                            f"{' '.join(fat['ptx']) or 'no PTX'}): GPUs newer than sm_{max(missing)} cannot JIT "
                            "its kernels and fail with 'no kernel image'")
    if problems:
        pytest.fail("\n".join(problems) + "\nfix: rebuild with '+PTX' on the top arch of MXNET_CUDA_ARCH "
                    f"({options.cuda_arch.requested.text!r}); suffixed PTX (compute_120a/f) is not portable", pytrace=False)
    if not profile.is_cuda:
        assert not any(f["ptx"] for f in libs.values()), "the CPU wheel carries PTX"


def test_fatbin_containers_consistent(audit, libmxnet_info, options):
    # The union is the SASS gate's; this one catches a module compiled with a narrower arch list
    # (its kernels would be missing on that arch). Judged on the requested archs that other
    # containers do carry: a linked-in library with extra archs is no failure, and an arch missing
    # everywhere is the SASS gate's failure, not a second one here. PTX is judged on the union
    # only: one .cu can yield several containers of which only one carries PTX.
    _libraries(audit, libmxnet_info)
    objs = dict(audit._fatbin_objs or ({LIBMXNET: audit._fatbin_obj} if audit._fatbin_obj else {}))
    problems = []
    for member, report in objs.items():
        required = set(options.cuda_arch.requested.sass) & set(report.sass_archs)
        bad = report.containers_missing(required)
        if bad:
            per = report.container_sass()
            detail = "; ".join(f"container {c} lacks {', '.join(f'sm_{a}' for a in sorted(required - per[c]))}"
                               for c in bad[:5])
            problems.append(f"{member}: {len(bad)} of {len(per)} fatbin containers carry SASS for fewer archs "
                            f"than the rest ({detail})")
    if problems:
        pytest.fail("\n".join(problems) + "\npart of the library was compiled with a different arch list; kernels "
                    "in it will be missing on those GPUs. Rebuild from a clean build dir with one "
                    "MXNET_CUDA_ARCH", pytrace=False)


def test_ptx_isa_within_driver_floor(audit, libmxnet_info, profile):
    # PTX is what GPUs newer than the SASS archs run, JIT-compiled by the user's driver: PTX of an ISA
    # newer than the profile's oldest supported driver runs (CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    # otherwise) is a wheel that loses those GPUs on exactly the drivers it promises to support.
    libs = _libraries(audit, libmxnet_info)
    if profile.cuda is None:
        return  # the CPU wheel carries no PTX (test_ptx_for_ptx_archs says so if it does)
    floor = profile.cuda.cublas.driver_floor
    problems = []
    for member, fat in sorted(libs.items()):
        for text in fat.get("ptx_versions", []):
            major, minor = (int(x) for x in text.split("."))
            why = ptx_isa_problem((major, minor), floor)
            if why:
                problems.append(f"{member}: {why}")
    if problems:
        pytest.fail("\n".join(problems) + f"\nfix: build with the nvcc of the profile's CUDA (its PTX runs on "
                    f"R{floor}), or raise the driver floor in build_steps/profiles.toml with the release notes",
                    pytrace=False)
