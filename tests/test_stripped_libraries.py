"""Every ELF shared library in the wheel is stripped of debug information (no DWARF .debug_* sections).

A libmxnet.so built with -g (CMAKE_BUILD_TYPE=RelWithDebInfo or Debug, or -g in CMAKE_CXX_FLAGS)
carries DWARF several times the size of its code, and every user downloads it with each release.

Policy: DWARF fails, a .symtab alone passes. Measured 2026-12-03 before choosing:
- Debian's libraries the bundle step copies (libopencv-dev and the 243 files of its closure,
  libgfortran) carry neither: only a .gnu_debuglink, the 52-byte pointer to a separate -dbg
  package, which this gate allows.
- A .symtab is a few percent of a library, not a multiple: 3.0% of libopenblas.so.0 in the public
  mxnet 1.9.1 wheel, 3-6% of numpy's manylinux libraries (auditwheel keeps it; its --strip is
  opt-in). It duplicates .dynsym (what the loader uses) plus local names that profilers and
  backtraces use. The official mxnet 1.9.1 libmxnet.so has no .symtab at all.
- The harness's own builds (profiles: CMAKE_BUILD_TYPE=Release, no -g) link without -s and no
  step strips, so libmxnet.so keeps a .symtab (gcc -shared keeps one without -s): failing on it would fail
  every build this harness makes until the stage step runs ``strip --strip-unneeded`` on it.
  Demanding that is a pipeline change, not this gate's; this gate holds the line that costs a multiple.
"""
from pathlib import Path

import pytest

from build_steps.readers.elf import NotElfError, section_span

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]

#: DWARF 2-5 sections (and the GNU .zdebug_* spelling of compressed ones) that a -g build leaves in
#: a library, named in the message.
DEBUG_SECTIONS = tuple(f".{z}debug_{s}" for z in ("", "z") for s in (
    "info", "abbrev", "line", "line_str", "str", "str_offsets", "aranges", "ranges", "rnglists",
    "loc", "loclists", "frame", "types", "macinfo", "macro", "pubnames", "pubtypes", "gnu_pubnames",
    "gnu_pubtypes", "names", "addr"))
#: What decides: every DWARF producer writes its compile units to .debug_info (-g1 and
#: -gline-tables-only too, beside .debug_line). Probing these first keeps the gate at four header
#: reads per library (~0.05 s for the ~240 of a release wheel's closure; all names: ~0.45 s).
TELLTALES = (".debug_info", ".zdebug_info", ".debug_line", ".zdebug_line")


def _sizes(path, names) -> dict:
    """section name -> size in bytes, for each of ``names`` present with file data."""
    spans = {name: section_span(path, name) for name in names}
    return {name: span[1] for name, span in spans.items() if span is not None and span[1]}


def _debug_sections(path) -> dict:
    """Every DEBUG_SECTIONS member of ``path`` with its size; empty when it has no debug info."""
    return _sizes(path, DEBUG_SECTIONS) if _sizes(path, TELLTALES) else {}


def test_libraries_carry_no_debug_info(audit, extracted_wheel):
    unstripped = []
    for member in audit.elf_members:
        path = Path(extracted_wheel.root) / member
        try:
            found = _debug_sections(path)
        except (NotElfError, OSError):
            continue  # an unreadable ELF is the loadability gates' fault, said once there
        if found:
            total = sum(found.values())
            unstripped.append(f"{member}: {', '.join(sorted(found))} ({total:,} bytes of debug info, "
                              f"{100 * total / path.stat().st_size:.0f}% of the file)")
    if unstripped:
        pytest.fail(f"{len(unstripped)} librar{'y is' if len(unstripped) == 1 else 'ies are'} not stripped of "
                    "debug information:\n  " + "\n  ".join(unstripped[:20])
                    + "\nfix: build with CMAKE_BUILD_TYPE=Release and no -g in CMAKE_*_FLAGS, or strip the "
                    "library before packaging (strip --strip-unneeded <lib>, as auditwheel repair --strip does)",
                    pytrace=False)
