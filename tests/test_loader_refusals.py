"""No ELF in the wheel is one the loader refuses on a user's machine.

An executable-stack request (PT_GNU_STACK with X, or no PT_GNU_STACK at all): glibc 2.41 and later
refuse to dlopen it ("cannot enable executable stack"), the fork links with -z noexecstack because
oneDNN's assembly would otherwise ask for one. Text relocations: refused under SELinux/W^X policies.
Another machine or ELF class than the wheel's platform tag: "wrong ELF class" at import.
"""
import pytest

from build_steps.readers.loadability import EXEC_STACK, PLATFORM, TEXTREL

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def _fail(audit, kind, what):
    bad = [r["reason"] for r in audit.loadability.refused if r["kind"] == kind]
    if bad:
        pytest.fail(f"{len(bad)} ELF file(s) in {audit.filename} {what}:\n  " + "\n  ".join(bad[:20]),
                    pytrace=False)


def test_no_executable_stack(audit):
    _fail(audit, EXEC_STACK, "ask for an executable stack")


def test_no_text_relocations(audit):
    _fail(audit, TEXTREL, "have text relocations")


def test_elf_matches_platform_tag(audit):
    if audit.loadability.platform is None and audit.loadability.objects:
        pytest.fail(f"{audit.filename}: its platform tag(s) {', '.join(audit.tags)} name no Linux architecture "
                    "this harness knows (build_steps.readers.elf_load.PLATFORM_ELF), so the ELF files cannot be checked "
                    "against it; a binary wheel must carry a platform tag such as linux_x86_64", pytrace=False)
    _fail(audit, PLATFORM, "are built for another platform than the tag says")
