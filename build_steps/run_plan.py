"""The run's plan, settled once when the options are made (issue 47 item 2): whether ``-m`` selects a
release run, the MXNet tree, where its build lives and the compiler launcher. harness.state makes it
with the options (HarnessRun.plan); every plugin, step and gate reads it from there, and
selftest/test_run_plan.py holds that nothing computes these again.

What cannot be had (no tree, a named launcher that is not installed) is kept as its UsageError's
words and raised where the value is used: an audit needs no launcher, and a run that names no tree
is refused by the first gate that needs one, in the words it always had.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import filesystem, launcher, source
from .errors import UsageError
from .launcher import Launcher
from .options import RunOptions

_RELEASE = re.compile(r"\brelease\b")
_NOT_RELEASE = re.compile(r"\bnot\s+release\b")
_BUILD = re.compile(r"(?<!not )\bbuild\b")


def selects_release(markexpr: str | None) -> bool:
    """``-m`` selects release gates (alone or in an expression, not ``not release``): a skip fails."""
    expr = markexpr or ""
    return bool(_RELEASE.search(expr)) and not _NOT_RELEASE.search(expr)


def release_requested(markexpr: str | None, publish: object = False, release_report: object = None) -> bool:
    """The run's verdict can lead to a publish: -m release, --publish or --release-report (the plugin
    guard asks before any plan exists, from pytest's early command line)."""
    return selects_release(markexpr) or bool(publish) or bool(release_report)


@dataclass(frozen=True)
class BuildPaths:
    """Where one build of one tree lives: the CMake tree, its logs, the staged package tree, the
    wheel staging dir. The package is staged in a copy of ``python/`` under the build dir (two build
    dirs of one tree never share it); a tree that cannot be written gets its dist/ in the build dir."""
    src: Path
    build_dir: Path
    logs: Path
    staging: Path
    package_tree: Path
    dist: Path

    def __init__(self, options: RunOptions, src: Path) -> None:
        # --build-dir is absolute (make_options resolves it against the current directory)
        build_dir = (options.build_dir or options.profile.default_build_dir(src)).resolve()
        for name, value in (("src", src), ("build_dir", build_dir), ("logs", build_dir / "harness-logs"),
                            ("staging", build_dir / "harness-wheel"),
                            ("package_tree", build_dir / "harness-package"),
                            ("dist", src / "dist" if filesystem.writable(src) is None else build_dir / "dist")):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class RunPlan:
    #: -m selects release gates: a skipped gate counts as failed (harness.plugins.gates)
    release: bool
    #: -m can select the build chain's gates (no -m, release, or build)
    selects_build: bool
    #: the MXNet tree: --mxnet-src, else the current directory when it is one; None: why_no_tree
    source: Path | None
    why_no_tree: str
    #: where a build of ``source`` lives; None in an audit (--wheel) or without a tree
    paths: BuildPaths | None
    #: --compiler-launcher on this host; None: why_no_launcher
    launcher: Launcher | None
    why_no_launcher: str

    def tree(self) -> Path:
        if self.source is None:
            raise UsageError(self.why_no_tree)
        return self.source

    def build_paths(self) -> BuildPaths:
        if self.paths is None:
            self.tree()
            raise UsageError("--wheel given: this run builds nothing")
        return self.paths

    def compiler_launcher(self) -> Launcher:
        if self.launcher is None:
            raise UsageError(self.why_no_launcher)
        return self.launcher


def make_plan(options: RunOptions, markexpr: str | None, cwd: Path) -> RunPlan:
    """The plan of a run with ``options``, selected by ``-m markexpr``, started in ``cwd``."""
    try:
        tree: Path | None = source.resolve_source(options.mxnet_src, cwd)
        why_no_tree = ""
    except UsageError as exc:
        tree, why_no_tree = None, str(exc)
    try:
        tool: Launcher | None = launcher.choose(options.compiler_launcher)
        why_no_launcher = ""
    except UsageError as exc:
        tool, why_no_launcher = None, str(exc)
    release = selects_release(markexpr)
    return RunPlan(release=release, selects_build=not markexpr or release or bool(_BUILD.search(markexpr)),
                   source=tree, why_no_tree=why_no_tree,
                   paths=BuildPaths(options, tree) if tree is not None and options.wheel is None else None,
                   launcher=tool, why_no_launcher=why_no_launcher)
