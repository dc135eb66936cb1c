"""The macOS wheel runs where its tag says: libmxnet.dylib is a Mach-O dylib, every Mach-O image
carries the profile's architecture (arm64), none needs a newer macOS than the platform tag
promises (pip would install it on a Mac where dyld then refuses to load it), and every arm64 slice
carries a valid code signature (Apple silicon runs nothing unsigned).
"""
import pytest

from build_steps.readers.macho_audit import version_tuple

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.macho]


def test_libmxnet_is_macho_dylib(macho_facts, audit):
    lib = macho_facts.libmxnet
    if not macho_facts.libmxnet_present:
        pytest.fail(f"{audit.filename} does not contain {lib}: the package was staged without the "
                    "library (the build script copies build/libmxnet.dylib into python/mxnet/)", pytrace=False)
    problems = [f"{m}: {why}" for m, why in sorted(macho_facts.errors.items())]
    info = macho_facts.images.get(lib)
    if info is not None:
        kinds = sorted({s.filetype for s in info.slices})
        if kinds != ["dylib"]:
            problems.append(f"{lib} is a Mach-O {'/'.join(kinds)}, not a dylib (MH_DYLIB): python's ctypes "
                            "loads it as a shared library; link it with -dynamiclib")
    if problems:
        pytest.fail(f"{problems[0]}" + "".join(f"\n  {p}" for p in problems[1:20])
                    + "\nfix: package the Mach-O files the macOS build produced (an ELF library or a "
                    "truncated copy does not load on a Mac)", pytrace=False)


def test_arch_is_the_profiles(macho_facts, audit, profile):
    want = macho_facts.arch
    problems = []
    if not macho_facts.platform_tags:
        problems.append(f"{audit.filename} has no macosx_* platform tag ({', '.join(macho_facts.non_macos_tags)})")
    for tag in macho_facts.platform_tags:
        if want not in tag.archs:
            problems.append(f"the wheel is tagged {tag.tag} ({'+'.join(tag.archs)}), but the {profile.name} "
                            f"profile ships {want}")
    required = {a for t in macho_facts.platform_tags for a in t.archs} | {want}
    for member, info in sorted(macho_facts.images.items()):
        missing = sorted(required - set(info.archs))
        if missing:
            what = f"a fat binary with slices {', '.join(info.archs)}" if info.fat else f"{info.archs[0]} only"
            problems.append(f"{member} is {what}: no {', '.join(missing)} slice")
    if problems:
        pytest.fail(f"{audit.filename} is not an {want} wheel: {problems[0]}"
                    + "".join(f"\n  {p}" for p in problems[1:20])
                    + f"\nfix: build with -DCMAKE_OSX_ARCHITECTURES={want} on an Apple-silicon Mac and "
                    "bundle dependencies built for it (a dylib without the slice fails to load with "
                    "'incompatible architecture')", pytrace=False)


def test_minimum_macos_matches_tag(macho_facts, audit):
    tags = [t for t in macho_facts.platform_tags if macho_facts.arch in t.archs] or macho_facts.platform_tags
    if not tags:
        pytest.fail(f"{audit.filename} has no macosx_* platform tag to compare the binaries' minimum "
                    "macOS with", pytrace=False)
    # pip picks the lowest macOS any tag allows: that is the version every image must load on.
    floor = min(tags, key=lambda t: version_tuple(t.min_os))
    problems = []
    for member in sorted(macho_facts.images):
        sl = macho_facts.image_slice(member)
        if sl.min_os is None:
            problems.append(f"{member} ({sl.arch}) has neither LC_BUILD_VERSION nor LC_VERSION_MIN_MACOSX: "
                            "its minimum macOS is unknown")
        elif version_tuple(sl.min_os) > version_tuple(floor.min_os):
            problems.append(f"{member} ({sl.arch}) needs macOS {sl.min_os} ({sl.version_command})")
    if problems:
        pytest.fail(f"{audit.filename} is tagged {floor.tag}, but {problems[0]}: pip installs it on macOS "
                    f"{floor.min_os}, where dyld refuses libraries built for a newer macOS"
                    + "".join(f"\n  {p}" for p in problems[1:20])
                    + "\nfix: build every bundled library with MACOSX_DEPLOYMENT_TARGET at or below the "
                    "tag (Homebrew bottles are built for the runner's own macOS), or tag the wheel with "
                    "the highest minimum the binaries need", pytrace=False)


def test_arm64_code_signatures_valid(macho_facts):
    bad = [f"{member} ({arch}) {why}" for member, per in sorted(macho_facts.signatures.items())
           for arch, why in sorted(per.items()) if why]
    if bad:
        pytest.fail(f"{bad[0]}: macOS on Apple silicon kills a process that loads it ('code signature "
                    "invalid', Killed: 9)" + "".join(f"\n  {b}" for b in bad[1:20])
                    + "\nfix: re-sign every library after the last install_name_tool edit "
                    "(codesign --force --sign - <lib>; the fork's build script ignores codesign errors)",
                    pytrace=False)
