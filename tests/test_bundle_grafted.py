"""No bundled library that a Python process commonly has loaded ships under its plain SONAME.

The regression: the real fork's wheel bundled OpenCV's closure as libcrypto.so.3, libz.so.1, ...
A Python that had run ``import ssl`` already held the host's libcrypto.so.3, and the loader matched
the wheel's NEEDED libcrypto.so.3 to it before searching any RUNPATH: every runtime gate failed with
"libcrypto.so.3 was loaded from /usr/lib/x86_64-linux-gnu/libcrypto.so.3, not from the installed
package". The bundle step grafts each library under a name of its own (``libcrypto-<hash8>.so.3``,
as auditwheel does); the list of commonly loaded libraries, with what loads each, is
build_steps.library_policy.COMMONLY_LOADED.
"""
import pytest

from build_steps.library_policy import plain_commonly_loaded

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_no_commonly_loaded_library_under_its_plain_soname(audit):
    bad = []
    for member in audit.shipped or audit.bundled:
        obj = audit.closure.objects.get(member)
        names = {member.rsplit("/", 1)[-1]} | ({obj.soname} if obj is not None and obj.soname else set())
        for name in sorted(names):
            why = plain_commonly_loaded(name)
            if why:
                bad.append(f"{member} (SONAME {obj.soname if obj else '?'}): {why}")
                break
    if bad:
        pytest.fail(f"{len(bad)} bundled librar{'y is' if len(bad) == 1 else 'ies are'} under the plain SONAME of "
                    "a library a Python process commonly has loaded already; there the loader hands the "
                    "wheel's libraries the process's copy, not the bundled one:\n  " + "\n  ".join(bad[:20])
                    + (f"\n  ... and {len(bad) - 20} more" if len(bad) > 20 else "")
                    + "\nfix: graft each bundled library under a name of its own (<stem>-<hash8>.so.N with its "
                    "SONAME and every NEEDED rewritten; build_steps.bundle does, as auditwheel repair does)",
                    pytrace=False)
