"""Reproducible objects: the first link of the compiler-launcher chain (CMAKE_<LANG>_COMPILER_LAUNCHER).

CMake runs ``python -I -S deterministic_compile.py --lang=CUDA --src=S --build=B [sccache] nvcc ARGS``;
this adds the flags that make the object the same bytes on any host, in any directory, at any time,
then execs the rest of the chain (the compiler cache, or the compiler). Measured sources of
nondeterminism and what removes each (docs/reproducible_builds.md has the measurements):

- nvcc names its temporaries after its pid, and the host stub's static-initialiser symbol
  (``_GLOBAL__sub_I_tmpxft_<pid>_...``) carries the name: ``--objdir-as-tempdir`` puts them beside
  the object, named after it.
- cudafe++ puts a random number into each anonymous namespace's mangled name, and gcc one into
  some symbol names: ``-frandom-seed=<seed>``, the seed a hash of the source's path *relative to the
  tree*, so it differs per object (nvcc requires that) and not per checkout.
- ``__FILE__``, assert messages and DWARF carry absolute paths of the tree and the build dir:
  ``-ffile-prefix-map`` (host code; nvcc forwards it with ``-Xcompiler``).
- sccache cannot compile with ``--objdir-as-tempdir`` (it runs nvcc's steps itself, from a
  ``--dryrun``, in its own temp dir; measured: exit 254, "No such file or directory"): a CUDA
  compile leaves sccache out of its chain (ccache runs nvcc whole and keeps it). A development build
  (``--dev``) keeps sccache for .cu objects and gives up ``--objdir-as-tempdir`` instead: fast, not
  reproducible, and the compile summary says so.
- ``__DATE__``/``__TIME__``: gcc reads SOURCE_DATE_EPOCH, which the compile step sets to the
  commit time (build_steps.reproducible); it is read from the environment, not the command line,
  so a new commit does not change every command and rebuild the tree.

The flags are a function of the command line alone (CMake's command for one object), so ninja's
record of the command is the record of the flags. This file imports nothing of the harness: it
runs once per compile, where a package import would cost more than the compile of a small object.
"""
from __future__ import annotations

import hashlib
import os
import sys

#: source suffixes whose compile gets a per-object seed
_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".C")


def source_of(args: list[str]) -> str | None:
    """The file a compile command compiles: the argument after ``-c``, else the one source-named
    argument (None for a link or a command without one)."""
    for i, a in enumerate(args[:-1]):
        if a == "-c" and args[i + 1].endswith(_SOURCES):
            return args[i + 1]
    named = [a for a in args if a.endswith(_SOURCES) and not a.startswith("-")]
    return named[0] if len(named) == 1 else None


def relative_name(path: str, src: str, build: str) -> str:
    """``path`` as the tree names it: relative to the source tree, else to the build dir
    (generated sources), else as given (a file outside both, the same on every host or not)."""
    full = os.path.normpath(os.path.join(build, path))
    # the build dir may lie inside the tree (the default build/): the more specific root first
    for root, tag in sorted(((build, "build"), (src, "src")), key=lambda r: -len(r[0])):
        if full == root or full.startswith(root.rstrip("/") + "/"):
            return f"{tag}/{os.path.relpath(full, root)}"
    return full


def seed(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def prefix_maps(src: str, build: str) -> list[str]:
    """``-ffile-prefix-map`` for the tree and the build dir. GCC applies the last matching map,
    so the longer root (the build dir inside the tree) comes last."""
    maps = sorted(((src, "/mxnet-src"), (build, "/mxnet-build")), key=lambda r: len(r[0]))
    return [f"-ffile-prefix-map={os.path.realpath(root)}={to}" for root, to in maps
            ] + ([f"-ffile-prefix-map={root}={to}" for root, to in maps
                  if os.path.realpath(root) != root])


#: what nvcc's host-compiler command line cannot carry inside quotes (preflight refuses such paths)
NVCC_UNQUOTABLE = ('"', "\\", "$", "`", "\n")


def _for_nvcc(flag: str) -> str:
    """A host flag as nvcc must be given it: nvcc runs the host compiler through a command line
    that it splits at spaces, so ``-ffile-prefix-map=/my trees/mxnet=/mxnet-src`` reached gcc as
    two arguments ("cannot specify -o with multiple files"); the path is double-quoted there
    (measured with nvcc 13.0: the object then carries /mxnet-src). A flag without whitespace is
    left as it was, so existing build dirs keep their commands."""
    if not any(c.isspace() for c in flag) or "=" not in flag:
        return flag
    option, _, rest = flag.partition("=")
    path, sep, to = rest.rpartition("=")
    return f'{option}="{path}"{sep}{to}' if sep else f'{option}="{rest}"'


def added_flags(lang: str, args: list[str], src: str, build: str, objdir_temps: bool = True) -> list[str]:
    """What the compile of ``args`` (the compiler's own arguments) gets added."""
    source = source_of(args)
    host = prefix_maps(src, build)
    if source is not None:
        host.append(f"-frandom-seed={seed(relative_name(source, src, build))}")
    if lang != "CUDA":
        return host
    out = [f"-Xcompiler={_for_nvcc(flag)}" for flag in host if "," not in flag]  # nvcc splits -Xcompiler at commas
    if source is not None and "-c" in args:
        out += (["--objdir-as-tempdir"] if objdir_temps else []) + [
            f"--frandom-seed={seed(relative_name(source, src, build))}"]
    return out


def _split(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    opts: dict[str, str] = {}
    rest = list(argv)
    while rest and rest[0].startswith("--") and rest[0][2:].split("=")[0] in ("lang", "src", "build", "dev"):
        key, _, value = rest.pop(0)[2:].partition("=")
        opts[key] = value
    return opts, rest


def command(argv: list[str], cwd: str) -> list[str]:
    """The command to exec for ``argv`` (this script's arguments) run in ``cwd``."""
    opts, chain = _split(argv)
    if not chain:
        raise SystemExit("deterministic_compile: no compiler given (CMake passes it after the launcher)")
    # the chain: optional cache tool(s), then the compiler, then its arguments. The compiler is the
    # first entry whose name is not a known cache tool.
    i = 0
    while i < len(chain) - 1 and os.path.basename(chain[i]) in ("sccache", "ccache"):
        i += 1
    tools, compiler_args = chain[:i], chain[i:]
    cuda, dev = opts.get("lang", "CXX") == "CUDA", "dev" in opts
    if cuda and not dev:
        tools = [t for t in tools if os.path.basename(t) != "sccache"]
    objdir_temps = not (cuda and any(os.path.basename(t) == "sccache" for t in tools))
    extra = added_flags(opts.get("lang", "CXX"), compiler_args[1:], opts.get("src", cwd),
                        opts.get("build", cwd), objdir_temps)
    return tools + compiler_args + extra


def main(argv: list[str] | None = None) -> None:
    cmd = command(list(sys.argv[1:] if argv is None else argv), os.getcwd())
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
