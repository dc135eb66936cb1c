"""Build provenance: the CMake cache, the commit stamp and the source tree the wheel came from.

Needs --cmake-cache and/or --mxnet-src; without them each gate skips with the reason (and a
release run turns that skip into a failure).
"""
import pytest

from build_steps.readers.gitstate import SHA_RE
from build_steps.arch import parse_cuda_arch

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def _cache(audit):
    if audit.cmake is None:
        pytest.skip("no CMake cache: pass --cmake-cache <build>/CMakeCache.txt or --mxnet-src to check "
                    "the build configuration")
    return audit.cmake


def _git(audit):
    if audit.git is None:
        pytest.skip("no source tree: pass --mxnet-src to check the commit stamp and the tree state")
    if audit.git.get("error"):
        pytest.fail(audit.git["error"], pytrace=False)
    return audit.git


def test_cmake_features(audit, profile):
    cache = _cache(audit)
    problems = []
    for key, state in cache["features"].items():
        want = profile.features[key]
        if state["enabled"] is None:
            problems.append(f"{key} was not found as a boolean CMake feature (raw {state['raw']!r})")
        elif state["enabled"] != want:
            problems.append(f"{key} expected {'ON' if want else 'OFF'}, found {state['raw']}")
    if problems:
        pytest.fail(f"CMake cache {cache['path']} disagrees with the {profile.name} profile:\n  "
                    + "\n  ".join(problems) + "\nfix: reconfigure with the profile's flags "
                    "(cmake -D<KEY>=ON|OFF) and rebuild", pytrace=False)


def test_cmake_cuda_arch(audit, options, profile):
    cache = _cache(audit)
    if not profile.is_cuda:
        assert not options.cuda_arch.requested.sass, "--cuda-arch given for a CPU profile"
        return
    raw = cache["cuda_arch"]
    if raw is None:
        pytest.fail(f"CMake cache {cache['path']} has no MXNET_CUDA_ARCH; reconfigure with "
                    f"-DMXNET_CUDA_ARCH={options.cuda_arch.requested.text!r}", pytrace=False)
    if parse_cuda_arch(raw) != options.cuda_arch.requested:
        pytest.fail(f"CMake cache MXNET_CUDA_ARCH={raw!r}, expected {options.cuda_arch.requested.text!r}: the build "
                    f"used another arch list (the CMake default lacks 10.0); reconfigure with "
                    f"-DMXNET_CUDA_ARCH={options.cuda_arch.requested.text!r} and rebuild", pytrace=False)


def test_commit_stamp(audit):
    git = _git(audit)
    head = git["commit"]
    if not head or not SHA_RE.match(head):
        pytest.fail(f"git commit {head!r} is not a 40-character hexadecimal SHA", pytrace=False)
    stamps = audit.stamps
    binary = stamps.get("binary") or []
    if head in binary:
        return
    if binary:
        pytest.fail(f"libmxnet.so carries commit stamp(s) {', '.join(h[:12] for h in binary)} but git HEAD is "
                    f"{head[:12]}: the wheel was built from another commit; rerun CMake configure at HEAD "
                    "and rebuild before packaging", pytrace=False)
    # Fallback (reported, never silent): the define CMake wrote into the build files.
    hashes = sorted({h for hs in (stamps.get("build_files") or {}).values() for h in hs})
    where = f"build files in {stamps.get('build_dir')}"
    if not hashes:
        pytest.fail(f"no commit stamp found: not in libmxnet.so's .rodata and no MXNET_COMMIT_HASH in {where} "
                    "(build.ninja / compile_commands.json); the build's provenance cannot be checked -- "
                    "configure with git available so CMake defines MXNET_COMMIT_HASH", pytrace=False)
    if len(hashes) > 1:
        pytest.fail(f"CMake build metadata contains multiple MXNET_COMMIT_HASH values: {', '.join(hashes)} "
                    f"({where}); reconfigure and rebuild from one commit", pytrace=False)
    if hashes[0] == "Unavailable":
        pytest.fail(f"CMake build metadata has MXNET_COMMIT_HASH=Unavailable ({where}): git failed at "
                    "configure time; reconfigure in a git checkout", pytrace=False)
    if hashes[0] != head:
        pytest.fail(f"CMake build metadata commit {hashes[0][:12]} does not match git HEAD {head[:12]}; "
                    "rerun CMake configure and rebuild before packaging", pytrace=False)


def test_clean_tracked_tree(audit):
    git = _git(audit)
    changes = git["tracked_changes"]
    if changes:
        n = len(changes)
        pytest.fail(f"tracked working tree is dirty ({n} changed path{'s' if n != 1 else ''}: "
                    f"{', '.join(c[3:] for c in changes[:5])}): the wheel cannot be traced to a commit; "
                    "commit or stash the changes and rebuild", pytrace=False)
