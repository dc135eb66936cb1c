"""Each library is in the wheel once: no byte-identical copies.

A wheel cannot hold symlinks, so a bundled real-name file plus its SONAME link ships the bytes
twice (in the fork's sample wheel 113 of the 246 files in mxnet/lib, 65 of 141 MB). The bundle
step puts each library in once, under the name the loader asks for (its SONAME).
"""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_no_duplicate_libraries(audit):
    dups = audit.loadability.duplicates
    if dups:
        lines = [" = ".join(group) for group in dups]
        pytest.fail(f"{len(dups)} ELF file(s) are in {audit.filename} more than once, byte for byte "
                    f"({audit.loadability.duplicate_bytes / 1e6:.1f} MB of copies):\n  " + "\n  ".join(lines[:20])
                    + "\nfix: bundle each library once, under its SONAME (build_steps.bundle), instead of a "
                    "real-name file plus a SONAME symlink that the wheel stores as a second copy", pytrace=False)
