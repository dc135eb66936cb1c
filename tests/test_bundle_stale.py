"""Nothing stale in mxnet/lib: every bundled library is needed, and each SONAME has one content.

The regression: a staging directory left over from an earlier build shipped in the wheel
(setuptools never cleans python/build/), with libraries nothing loads and, worse, an old copy of a
library beside the new one under the same SONAME: which one the loader opens depends on the name.
"""
import pytest

from build_steps.readers.audit import BUNDLE_DIR

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_no_unneeded_bundled_libraries(audit):
    # When a needed bundled file is not ELF (the closure gate's failure), what it needed is
    # unknown: its dependencies are not called stale on top of that one fault.
    stale = audit.loadability.stale
    if stale:
        elves = set(audit.elf_members)
        lines = [f"{m}{'' if m in elves else ' (not even an ELF file)'}" for m in stale]
        hint = ("\n(the wheel also has unresolved NEEDED entries: a library missing from the bundle may be "
                "what needed these)" if audit.loadability.unresolved else "")
        pytest.fail(f"{len(stale)} file(s) under {BUNDLE_DIR} that no ELF in the wheel needs, directly or "
                    "through the closure from libmxnet.so: a stale or foreign staging directory was "
                    "packaged:\n  " + "\n  ".join(lines[:30]) + hint
                    + f"\nfix: re-run the bundle step (it resets {BUNDLE_DIR}) and clean python/build/ before "
                    "building the wheel", pytrace=False)


def test_one_content_per_soname(audit):
    conflicts = audit.loadability.soname_conflicts
    if conflicts:
        lines = [f"{soname}: {', '.join(members)} differ" for soname, members in conflicts.items()]
        pytest.fail(f"{len(conflicts)} SONAME(s) bundled twice with different contents (an inconsistent "
                    "staging directory: which copy loads depends on the name asked for):\n  "
                    + "\n  ".join(lines[:20])
                    + f"\nfix: re-run the bundle step, which puts each library in {BUNDLE_DIR} once, under its "
                    "SONAME", pytrace=False)
