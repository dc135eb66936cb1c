"""The macOS wheel is self-contained: every dylib reference of libmxnet.dylib and of each bundled
library resolves inside the wheel (@loader_path / @rpath + LC_RPATH) or to the system (/usr/lib,
/System); nothing points at the build host (Homebrew, MacPorts, a home dir); the OpenMP runtime
and the OpenCV closure are bundled and reached loader-relatively; install names are consistent.

The Mach-O analogue of the OpenCV self-containment gates (docs/background.md: the macOS wheel also
bundles the OpenMP runtime, libomp.dylib, into mxnet/lib/, and libmxnet.dylib reaches it
loader-relatively).
"""
import posixpath

import pytest

from build_steps.readers.macho_audit import BUILD_HOST, BUNDLED, UNRESOLVED
from build_steps.library_policy import OPENMP_RUNTIME_RE

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.macho]

BUNDLE_DIR = "mxnet/lib/"


def _name(path):
    return posixpath.basename(path)


def _openmp_refs(facts):
    return [r for r in facts.references_of(facts.libmxnet) if OPENMP_RUNTIME_RE.match(_name(r.path))]


def _opencv_refs(facts):
    return [r for r in facts.references_of(facts.libmxnet) if _name(r.path).startswith("libopencv_")]


def _host_prefix(path, policy):
    return next((p for p in policy.build_host_prefixes if path.startswith(p)), None)


def test_no_build_host_paths(macho_facts, profile):
    policy = profile.macho
    bad = [(r.by, r.kind, r.path) for r in macho_facts.references if r.verdict == BUILD_HOST]
    for member in sorted(macho_facts.images):
        bad += [(member, "LC_RPATH", entry) for entry in macho_facts.image_slice(member).rpaths
                if entry.startswith("/") and not entry.startswith(policy.system_prefixes)]
    if bad:
        lines = [f"{member}: {kind} {path}" for member, kind, path in bad]
        named = sorted({p for _m, _k, path in bad for p in [_host_prefix(path, policy)] if p})
        where = f"; build-host prefixes {', '.join(named)}" if named else ""
        pytest.fail(f"{lines[0]}: an absolute non-system path ({len(bad)} in all{where}); on a user's "
                    "Mac it loads another build of the library or nothing:\n  "
                    + "\n  ".join(lines[:20]) + "\nfix: bundle the library into mxnet/lib and point the "
                    "reference at it (install_name_tool -change <path> @loader_path/<name>), delete "
                    "build-host LC_RPATH entries (install_name_tool -delete_rpath), re-sign (codesign -s -)",
                    pytrace=False)


def test_dylib_references_resolve(macho_facts):
    # libmxnet's own OpenMP and OpenCV references are owned by the two gates below.
    owned = {id(r) for r in _openmp_refs(macho_facts) + _opencv_refs(macho_facts)}
    bad = [r for r in macho_facts.references if r.verdict == UNRESOLVED and id(r) not in owned]
    if bad:
        first = bad[0]
        pytest.fail(f"{first.by}: {first.path} does not resolve inside the wheel ({len(bad)} reference(s) in "
                    "all), so dyld fails with 'Library not loaded' on a clean Mac:\n  "
                    + "\n  ".join(f"{r.by}: {r.kind} {r.path} -- {r.detail}" for r in bad[:20])
                    + "\nfix: bundle the missing libraries into mxnet/lib (the closure of every bundled "
                    "library, not only libmxnet's direct dependencies) and reference them with "
                    "@loader_path/<name>", pytrace=False)


def test_openmp_runtime_bundled(macho_facts, audit, profile):
    lib = _name(macho_facts.libmxnet)
    refs = _openmp_refs(macho_facts)
    bundled = [m for m in audit.members if m.startswith(BUNDLE_DIR) and OPENMP_RUNTIME_RE.match(_name(m))]
    if not profile.features["USE_OPENMP"]:
        if refs or bundled:
            pytest.fail(f"the {profile.name} profile builds without OpenMP, but {lib} loads "
                        f"{', '.join(r.path for r in refs) or '-'} and the wheel bundles "
                        f"{', '.join(bundled) or '-'}", pytrace=False)
        return
    if macho_facts.libmxnet not in macho_facts.images:
        pytest.fail(f"cannot check: {lib} is missing or unreadable (see test_libmxnet_is_macho_dylib)",
                    pytrace=False)
    why = profile.macho.bundled_runtimes.get("libomp", "")
    problems = []
    if not refs:
        problems.append(f"{lib} has no OpenMP runtime dependency (libomp) despite USE_OPENMP=ON: it was "
                        "built with OpenMP off (or linked it statically); configure with -DUSE_OPENMP=ON "
                        "-DOPENMP_ROOT=<hermetic libomp prefix>")
    if not bundled:
        problems.append(f"{audit.filename} does not bundle the OpenMP runtime (mxnet/lib/libomp*): {why}")
    for r in refs:
        if not r.path.startswith(("@loader_path/", "@rpath/")):
            problems.append(f"{lib} OpenMP reference {r.path} is not loader-relative (it would not resolve "
                            "from inside the wheel on a clean host)")
        elif r.verdict != BUNDLED:
            problems.append(f"{lib} OpenMP reference {r.path} does not resolve to a bundled copy: {r.detail}")
        elif not r.target.startswith(BUNDLE_DIR):
            problems.append(f"{lib} OpenMP reference {r.path} resolves to {r.target}, not into mxnet/lib/")
    if problems:
        pytest.fail("\n".join(problems) + "\nfix: copy libomp.dylib into mxnet/lib, set its id to "
                    "@rpath/libomp.dylib and repoint libmxnet.dylib with install_name_tool -change <old> "
                    "@loader_path/lib/libomp.dylib (the fork's build script does this when USE_OPENMP=ON)",
                    pytrace=False)


def test_opencv_closure_bundled(macho_facts, audit, profile):
    lib = _name(macho_facts.libmxnet)
    refs = _opencv_refs(macho_facts)
    if not profile.features["USE_OPENCV"]:
        if refs:
            pytest.fail(f"{lib} loads OpenCV ({', '.join(r.path for r in refs)}) although the "
                        f"{profile.name} profile builds without it", pytrace=False)
        return
    if macho_facts.libmxnet not in macho_facts.images:
        pytest.fail(f"cannot check: {lib} is missing or unreadable (see test_libmxnet_is_macho_dylib)",
                    pytrace=False)
    if not refs:
        pytest.fail(f"{lib} has no libopencv_* dependencies despite USE_OPENCV=ON: the wheel was built with "
                    "OpenCV compiled out (or linked statically, which the fork's build does not do); "
                    "mx.image.imdecode raises 'Build with USE_OPENCV=1'. Install OpenCV (brew install "
                    "opencv), configure with -DUSE_OPENCV=ON -DOpenCV_DIR=... and rebuild", pytrace=False)
    problems = []
    for r in refs:
        if r.verdict != BUNDLED:
            problems.append(f"{lib} loads {r.path}, which is not bundled in mxnet/lib ({r.detail or r.verdict})")
        elif not r.target.startswith(BUNDLE_DIR):
            problems.append(f"{lib} loads {r.path} from {r.target}, not from mxnet/lib/")
    if problems:
        pytest.fail(f"{audit.filename} does not bundle libmxnet's OpenCV libraries: {problems[0]}"
                    + "".join(f"\n  {p}" for p in problems[1:])
                    + "\nfix: bundle the OpenCV closure into mxnet/lib and repoint libmxnet.dylib with "
                    "install_name_tool -change <old> @loader_path/lib/<name>", pytrace=False)


def test_install_names_consistent(macho_facts, profile):
    prefix = profile.macho.install_name_prefix
    problems = []
    owners: dict = {}
    for member in [macho_facts.libmxnet] + macho_facts.bundled_images:
        if member not in macho_facts.images:
            continue
        for sl in macho_facts.images[member].slices:
            want = prefix + _name(member)
            if sl.filetype != "dylib":
                continue  # not a dylib: the Mach-O gate reports libmxnet; others have no id to check
            if sl.install_id is None:
                problems.append(f"{member} ({sl.arch}) has no LC_ID_DYLIB")
            elif sl.install_id != want:
                problems.append(f"{member} ({sl.arch}) has install name {sl.install_id}, not {want}")
            if sl.install_id:
                owners.setdefault(sl.install_id, set()).add(member)
    for install_id, members in sorted(owners.items()):
        if len(members) > 1:
            problems.append(f"install name {install_id} is carried by {len(members)} files: {', '.join(sorted(members))}")
    if problems:
        pytest.fail(f"{problems[0]}: install names of the wheel's dylibs are inconsistent (dyld identifies a loaded "
                    "library by its install name: a stale or shared one makes it reuse the wrong file, "
                    "and anything linked against the wheel records a wrong path):\n  " + "\n  ".join(problems[:20])
                    + f"\nfix: install_name_tool -id {prefix}<file name> on libmxnet.dylib and each bundled "
                    "library, then re-sign (codesign --force -s -)", pytrace=False)
