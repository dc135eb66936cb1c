"""OpenCV: linked in, bundled with its whole closure, and every bundled library loadable on its own.

The regression this exists for: a wheel built with OpenCV compiled out imported fine and broke
27 notebooks (docs/background.md); and wheels whose bundled closure missed a transitive
library (libcharls.so.2, libgdcmMSFF.so.3.0) on clean hosts.
"""
import pytest

from build_steps.library_policy import NEVER_BUNDLE, is_host_library

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def _opencv(needed):
    return [n for n in needed if n.startswith("libopencv_")]


def test_opencv_linked_as_profile_says(libmxnet_info, profile):
    found = _opencv(libmxnet_info.needed)
    if profile.features["USE_OPENCV"] and not found:
        pytest.fail("libmxnet.so has no libopencv_* NEEDED: the wheel was built with OpenCV compiled out "
                    "(mx.image.imdecode/imresize will raise 'Build with USE_OPENCV=1'); install "
                    "libopencv-dev, delete the build dir, reconfigure with USE_OPENCV=ON and rebuild",
                    pytrace=False)
    if not profile.features["USE_OPENCV"] and found:
        pytest.fail(f"libmxnet.so has OpenCV NEEDED entries although the {profile.name} profile builds "
                    f"without OpenCV: {', '.join(found)}; reconfigure with USE_OPENCV=OFF", pytrace=False)


def test_needed_opencv_sonames_bundled(libmxnet_info, audit):
    # Owns libmxnet's own libopencv_* NEEDED entries (whether OpenCV should be linked at all is the
    # gate above); the libraries those pull in are the closure gate's (test_needed_resolve.py).
    needed = _opencv(libmxnet_info.needed)
    bundled = {m.rsplit("/", 1)[-1] for m in audit.bundled}
    if needed and not any(b.startswith("libopencv_") for b in bundled):
        pytest.fail(f"{audit.filename} does not bundle mxnet/lib/libopencv_*, but libmxnet.so needs "
                    f"{', '.join(needed)}: on a host without libopencv-dev `import mxnet` fails; "
                    "bundle the OpenCV closure (build_steps.bundle) before packaging", pytrace=False)
    missing = [n for n in needed if n not in bundled]
    if missing:
        pytest.fail(f"{audit.filename} needs {', '.join(missing)} but does not bundle that SONAME in "
                    "mxnet/lib/ (the loader looks the SONAME up, not the real file name): re-run the "
                    "bundle step, which creates a SONAME entry for each seed", pytrace=False)


def test_bundled_libs_have_origin_runpath(audit):
    bad = []
    for member in audit.bundled_elf:
        obj = audit.closure.objects.get(member)
        if obj is None or obj.error:
            continue  # reported by the closure gate
        if not obj.has_origin:
            bad.append(f"{member} ({obj.search_tag or 'no RUNPATH'}: {':'.join(obj.search_path) or '-'})")
    if bad:
        pytest.fail(f"{len(bad)} bundled librar{'y has' if len(bad) == 1 else 'ies have'} no $ORIGIN "
                    "search path; a RUNPATH is not inherited, so their own dependencies are looked up on "
                    "the host: " + ", ".join(bad[:10]) + "; set RUNPATH $ORIGIN on each bundled library "
                    "(patchelf --set-rpath '$ORIGIN')", pytrace=False)


def test_nothing_forbidden_bundled(audit):
    # Every directory a RUNPATH reaches is shipped as much as mxnet/lib: $ORIGIN/../nvidia/cu13/lib
    # leaves mxnet/, and a libcuda.so.1 placed there is the one the loader opens.
    bad = []
    for member in audit.shipped or audit.bundled:
        name = member.rsplit("/", 1)[-1]
        reason = next((why for prefix, why in NEVER_BUNDLE.items() if name.startswith(prefix)), None)
        if reason is None and is_host_library(name):
            reason = (f"{name} is a host library (library_policy.HOST_LIBRARIES): a second copy next to the "
                      "host's fights it at run time")
        if reason:
            bad.append(f"{member}: {reason}")
    if bad:
        pytest.fail("the wheel bundles libraries it must never ship:\n  " + "\n  ".join(bad)
                    + f"\nfix: remove them from the wheel ({', '.join(d + '/' for d in audit.shipped_dirs) or 'mxnet/lib/'} "
                    "are searched by the loader; the bundle step skips host libraries)", pytrace=False)


def test_bundled_closure_within_budget(audit, profile, options):
    # Issue 46: the system OpenCV's closure was 133 libraries, 230 MB of the real fork's wheel (GDAL,
    # poppler, OpenSSL, X11, database clients ...). The profile states, per OpenCV choice, how many
    # files and MB mxnet/lib may hold (measured, profiles.toml closure_budget): a new dependency that
    # drags a stack in is a failure here, not a surprise in a user's CVE scanner.
    budget = profile.closure_budget.get(options.opencv)
    if budget is None:
        pytest.fail(f"the {profile.name} profile sets no closure budget for --opencv={options.opencv} "
                    "(profiles.toml [profiles.<flavor>.closure_budget]): measure the bundled closure and "
                    "state it", pytrace=False)
    files, mb = budget
    sizes = audit.bundled_bytes
    have_mb = sum(sizes.values()) / 1e6
    if len(sizes) > files or have_mb > mb:
        largest = sorted(sizes, key=sizes.get, reverse=True)[:8]
        pytest.fail(f"{audit.filename} bundles {len(sizes)} files, {have_mb:.1f} MB in mxnet/lib; the "
                    f"{profile.name} profile's budget with --opencv={options.opencv} is {files} files, "
                    f"{mb:g} MB. Largest: " + ", ".join(f"{m.rsplit('/', 1)[-1]} ({sizes[m] / 1e6:.1f} MB)"
                                                       for m in largest)
                    + ". Build with --opencv=built (docs/opencv_build.md), or find the dependency that "
                    "dragged the new libraries in"
                    + ("; an audit (--wheel) of a wheel that bundles the host's OpenCV states --opencv=system"
                       if options.wheel is not None and options.opencv == "built" else ""), pytrace=False)
