"""Every NEEDED of every ELF in the wheel resolves where it will be on the user's machine.

Bundled (reached through that object's own RUNPATH), provided by a declared pip dependency
(through the RUNPATH entry that reaches site-packages), or in the profile's host baseline
([host_baseline] of profiles.toml): anything else works on the build host only. The regressions this exists
for: clean hosts failing with "libcharls.so.2: cannot open shared object file" (a transitive
OpenCV library left to the host), a libmxnet.so linked against Debian's static OpenBLAS that
NEEDs libgfortran.so.5, which a host without gfortran lacks, a CUDA 11 runtime or cuDNN 8 taken for
the CUDA 13 stack by name prefix (the real mxnet-cu112 wheel), a NEEDED path with a slash (opened
relative to the working directory) and a non-ELF file bundled under a library's name.
"""
import pytest

from build_steps.readers.audit import LIBMXNET
from build_steps.readers.loader import RULE_MISSING, RULE_PIP, RULE_UNREACHABLE, UNRESOLVED

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_every_needed_resolves(audit, profile):
    problems = []
    for member, obj in audit.closure.objects.items():
        if obj.error:
            problems.append(f"{member}: {obj.error}")
    for r in audit.closure.resolutions:
        if r.verdict != UNRESOLVED:
            continue
        if r.by == LIBMXNET and (r.rule == RULE_PIP or (r.needed.startswith("libopencv_")
                                                        and r.rule in (RULE_MISSING, RULE_UNREACHABLE))):
            continue  # owned by the libmxnet RUNPATH gate and the OpenCV SONAME gate
        problems.append(f"{r.by} needs {r.needed}: {r.detail}")
    if problems:
        pytest.fail(f"{len(problems)} NEEDED entr{'y does' if len(problems) == 1 else 'ies do'} not resolve "
                    f"on a clean {profile.name} host (host baseline: {', '.join(profile.host_baseline)}):\n  "
                    + "\n  ".join(problems[:20])
                    + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""), pytrace=False)
