"""Every RUNPATH/RPATH entry of every ELF in the wheel is relative to $ORIGIN and stays in site-packages.

An absolute entry names a build-host directory: missing on a user's machine, or worse, one that
another user can write to, so a library planted there is loaded into the process (auditwheel
removes such entries for this reason). The fork's build script appends libmxnet.so's build-tree
RUNPATH after the wheel-relative entries; the stage step drops it, and this gate holds for any
wheel, also one the fork's script made.
"""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_runpaths_are_origin_relative(audit):
    bad = audit.loadability.bad_runpath
    if bad:
        lines = [f"{b['member']} {b['tag']} entry {b['entry']!r}: {b['why']}" for b in bad]
        pytest.fail(f"{len(bad)} RUNPATH/RPATH entr{'y is' if len(bad) == 1 else 'ies are'} not wheel-relative:\n  "
                    + "\n  ".join(lines[:20])
                    + "\nfix: set each library's RUNPATH to $ORIGIN-relative entries only (the stage step "
                    "drops build-tree entries: patchelf --set-rpath '$ORIGIN/lib:...')", pytrace=False)
