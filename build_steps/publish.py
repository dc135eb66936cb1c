"""Tag and publish a release, fail-closed: the last step of a green release run.

The fork's wrapper (tools/release_cuda_wheel.sh) did this in bash; this module keeps its order
(preflight before any build, tag, push, ``gh release create``) and fixes its gaps
(docs/background.md, G5-G7):

* the build number is picked from local AND remote tags, and an unreadable remote refuses the
  publish instead of passing the collision check silently;
* an explicit version is validated against the release scheme, and it is the version the build uses;
* the tag goes on the commit the wheel's own commit stamp names, which must be HEAD;
* a failure after the tag push says exactly what now exists and how to undo it.

Functions take paths and plain values and return products; nothing here knows about pytest.
"""
from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence


from . import gitops
from .errors import GitError, PublishFailed, PublishRefused, UsageError, WheelNameError
from .pinning import sha256_of
from .profile_data import Profile
from .versions import validate_version
from .readers.wheel_name import parse_wheel_name

if TYPE_CHECKING:
    from .options import RunOptions


# --------------------------------------------------------------------------------------------
# Versions and tags
# --------------------------------------------------------------------------------------------
def tag_for(version: str) -> str:
    """The release tag of a version: ``v2.0.0+cu13.bw.20260614.1`` (the fork's convention)."""
    return f"v{version}"


def utc_today() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d")


def build_numbers(profile: Profile, tags: Iterable[str], day: str) -> set[int]:
    """Build numbers already used on ``day`` by ``tags``: the bare ``<prefix>.<day>`` counts as 0.

    Tags of other days, other flavors and non-numeric suffixes are ignored.
    """
    pattern = re.compile(
        r"v" + re.escape(profile.version_prefix) + r"\." + re.escape(day) + r"(?:\.(\d+))?")
    used = set()
    for tag in tags:
        m = pattern.fullmatch(tag)
        if m:
            used.add(int(m.group(1)) if m.group(1) is not None else 0)
    return used


def next_version(profile: Profile, tags: Iterable[str], day: str) -> str:
    """``<prefix>.<day>.<max used + 1>``, so the first release of a day is ``.1``."""
    used = build_numbers(profile, tags, day)
    return f"{profile.version_prefix}.{day}.{max(used, default=0) + 1}"


def wheel_version(wheel: Path) -> str:
    try:
        return str(parse_wheel_name(wheel).version)
    except WheelNameError as exc:
        raise PublishRefused(f"{wheel}: not a valid wheel file name ({exc.reason})") from None


# --------------------------------------------------------------------------------------------
# Preflight: everything that can refuse a publish is checked before the (hour-long) build
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RepoState:
    repo: Path
    head: str
    branch: str
    remote: str
    remote_url: str
    remote_tags: tuple[str, ...]
    local_tags: tuple[str, ...]


def check_gh(gh: str = "gh") -> None:
    """``gh`` is on PATH and logged in (the release is created with it)."""
    exe = shutil.which(gh)
    if exe is None:
        raise PublishRefused(
            "--publish: the GitHub CLI `gh` is not on PATH (it creates the release); "
            "install it (https://cli.github.com) or rehearse with --dry-run")
    proc = subprocess.run([exe, "auth", "status"], capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise PublishRefused(
            "--publish: `gh auth status` failed, gh is not logged in; run `gh auth login` "
            "or rehearse with --dry-run" + (f" ({detail[0]})" if detail else ""))


def preflight(src: Path, remote: str, *, dry_run: bool, yes: bool = False,
              system: str | None = None, gh: str = "gh") -> RepoState:
    """Refuse (PublishRefused) unless a release could be published from ``src`` to ``remote``.

    Checks, in the fork's order: Linux; a git repository; no uncommitted tracked changes
    (untracked files are fine: build outputs live there); ``gh`` present and logged in (not for
    a dry run); the remote readable. A real publish must be confirmed with ``--yes`` up front,
    because the run is unattended by the time the gates are green.
    """
    system = system or platform.system()
    if system != "Linux":
        raise PublishRefused(
            f"--publish is Linux/CUDA only (this host is {system}); build and audit there, "
            "or run without --publish")
    if not dry_run and not yes:
        raise PublishRefused(
            "--publish creates a tag, pushes it and makes a GitHub release: confirm with --yes, "
            "or rehearse with --dry-run (prints the commands, changes nothing)")
    src = Path(src)
    if not src.is_dir() or not gitops.is_git_repo(src):
        raise PublishRefused(
            f"--publish: {src} is not a git repository; pass the MXNet checkout with --mxnet-src "
            "(the release tag is made there)")
    repo = gitops.toplevel(src)
    changes = gitops.tracked_changes(repo)
    if changes:
        shown = "; ".join(changes[:5]) + ("; ..." if len(changes) > 5 else "")
        raise PublishRefused(
            f"--publish: {repo} has {len(changes)} uncommitted tracked change(s) ({shown}); "
            "commit or stash them first: a release must be built from a commit, not a working tree")
    if not dry_run:
        check_gh(gh)
        try:
            gitops.committer_ident(repo)
        except GitError:
            # An annotated tag needs one; finding out after the build would waste the build.
            raise PublishRefused(
                f"--publish: git has no committer identity in {repo} (needed for the annotated "
                "tag); set it with git config user.name / user.email") from None
    try:
        url = gitops.remote_url(repo, remote)
        remote_tags = gitops.remote_tags(repo, remote)
    except GitError as exc:
        raise PublishRefused(
            f"--publish: cannot read the tags of remote {remote!r}.\nRefusing to pick a version or "
            "call a tag free without seeing the remote; fix the network/credentials or choose "
            f"another remote with --remote.\n{exc}") from None
    return RepoState(repo=repo, head=gitops.head_commit(repo), branch=gitops.current_branch(repo),
                     remote=remote, remote_url=url, remote_tags=tuple(remote_tags),
                     local_tags=tuple(gitops.local_tags(repo)))


@dataclass(frozen=True)
class ReleaseVersion:
    version: str
    tag: str
    #: where the version came from: "--wheel-version", "the wheel's file name" or "auto-picked ..."
    source: str


def resolve_release_version(state: RepoState, profile: Profile, *, explicit: str | None = None,
                            wheel: Path | None = None, today: str | None = None) -> ReleaseVersion:
    """The version (and tag) this release is built and published as.

    ``--wheel-version`` wins and must follow the release scheme; with an existing ``--wheel`` the
    version is the wheel's own (it cannot be rebuilt under another); otherwise the next free build
    number of today (UTC) over the local and remote tags. A tag that exists anywhere is refused.
    """
    if explicit:
        version = validate_version(explicit, profile, strict_scheme=True)
        source = "--wheel-version"
        if wheel is not None and wheel_version(wheel) != version:
            raise PublishRefused(
                f"--wheel-version {version} does not match the version of --wheel {Path(wheel).name} "
                f"({wheel_version(wheel)}); a wheel is published under the version it was built with")
    elif wheel is not None:
        version = validate_version(wheel_version(wheel), profile, strict_scheme=True)
        source = "the wheel's file name"
    else:
        day = today or utc_today()
        version = next_version(profile, state.local_tags + state.remote_tags, day)
        source = f"auto-picked: next free build number of {day} over local and remote tags"
    tag = tag_for(version)
    if tag in state.local_tags:
        raise PublishRefused(
            f"tag {tag} already exists locally in {state.repo}; choose a higher build number "
            "with --wheel-version (or omit it to auto-pick)")
    if tag in state.remote_tags:
        raise PublishRefused(
            f"tag {tag} already exists on remote {state.remote!r}; choose a higher build number "
            "with --wheel-version (or omit it to auto-pick)")
    return ReleaseVersion(version=version, tag=tag, source=source)


# --------------------------------------------------------------------------------------------
# The facts the release notes are made of (from this run's provenance report)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReleaseFacts:
    features: tuple[str, ...]
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    #: the commit stamp(s) the wheel carries (from the binary; build files only as a fallback)
    commits: tuple[str, ...]
    #: where the stamp was read: "binary" or "build files"
    stamp_source: str = "binary"


def choose_release(opts: RunOptions, cwd: Path, release_report: object) -> tuple[ReleaseVersion, Path]:
    """A --publish run's release version and tree, chosen at session start before anything is built
    (harness.plugins.publish_run), so the chain builds exactly the version that will be tagged; a
    UsageError for what makes the run unable to publish."""
    if opts.wheel is not None:
        # Issue 19, item 4: the release set's build gates verify the build of this run (its
        # CMake cache, compile, bundle, package); a wheel built elsewhere has none here, so
        # they could only skip, which a release counts as failed. Refused before anything runs.
        raise UsageError(
            f"--publish with --wheel {opts.wheel.name}: only a full build publishes. The release "
            "set's build gates verify the build made in the same run, which an existing wheel "
            "does not have; run pytest -m release --mxnet-src=<the checkout> --publish (it builds, "
            "verifies and publishes in one run), or audit this wheel without --publish")
    if opts.yes:
        # Issue 29: the run that builds and verifies never holds the token; publishing is a step
        # of its own, as in CI (docs/release_procedure.md).
        raise UsageError(
            "--publish --yes: the verify run publishes nothing itself any more; run it with "
            "--publish --release-report=R, then publish with mxnet-release publish --report=R --yes")
    if not opts.dry_run and not release_report:
        raise UsageError(
            "--publish needs --release-report=PATH (the report mxnet-release publish --report=PATH "
            "publishes from) or --dry-run (prints the commands)")
    state = preflight(opts.mxnet_src or cwd, opts.remote, dry_run=True)
    release = resolve_release_version(state, opts.profile, explicit=opts.wheel_version, wheel=opts.wheel)
    return release, opts.mxnet_src or state.repo


def _get(obj: object, name: str, default: Any = None) -> Any:
    # a fact of the audit or of its JSON, whichever shape ``obj`` has: Any, as the facts are
    # of many types, each checked where release_facts reads it
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _arch_names(value: Iterable[object] | None, prefix: str) -> tuple[str, ...]:
    names: list[str] = []
    for item in value or ():
        digits = re.search(r"(\d+[a-z]?)$", str(item))
        if digits and f"{prefix}_{digits.group(1)}" not in names:
            names.append(f"{prefix}_{digits.group(1)}")
    return tuple(names)


def release_facts(audit: object) -> ReleaseFacts:
    """Features, SASS/PTX archs and commit stamps from this run's provenance facts.

    ``audit`` is the static gates' audit (build_steps.readers.audit.Audit) or a dict of the same shape
    (its ``to_json()``): ``cmake.features`` (KEY -> {enabled}), ``fatbin.sass``/``fatbin.ptx``,
    ``stamps.binary`` / ``stamps.build_files``, ``requirements.hard``. Missing facts raise: the
    notes must say what this run verified, never what the profile merely promises.
    """
    if audit is None:
        raise PublishFailed("no provenance report for this run: the release notes cannot be written")
    cmake = _get(audit, "cmake")
    features_raw = _get(cmake, "features")
    if not features_raw:
        raise PublishFailed(
            "the provenance report of this run has no CMake feature states (no CMakeCache.txt was "
            "audited): pass --cmake-cache or --mxnet-src with the build tree, so the release notes "
            "list the features the wheel was built with")
    features: list[str] = []
    for key, state in features_raw.items():
        on = _get(state, "enabled") if isinstance(state, Mapping) or hasattr(state, "enabled") else state
        if on:
            features.append(re.sub(r"^USE_", "", str(key)).upper())
    hard = _get(_get(audit, "requirements"), "hard") or {}
    if any(str(name).lower() == "onnx" for name in hard):
        features.append("ONNX")

    fatbin = _get(audit, "fatbin")
    sass = _arch_names(_get(fatbin, "sass") or _get(fatbin, "sass_archs"), "sm")
    ptx = _arch_names(_get(fatbin, "ptx") or _get(fatbin, "ptx_archs"), "compute")
    # a CPU build's cache keeps MXNET_CUDA_ARCH's default (the fork's and the sample tree's do):
    # only a build with USE_CUDA on has a fatbin to read
    if _get(cmake, "cuda_arch") and "CUDA" in features and not sass:
        raise PublishFailed(
            "the provenance report of this run lists no SASS archs for a CUDA build: the "
            ".nv_fatbin of libmxnet.so was not read, so the notes cannot name the GPUs it supports")

    stamps = _get(audit, "stamps") or {}
    commits, source = tuple(_get(stamps, "binary") or ()), "binary"
    if not commits:
        files = _get(stamps, "build_files") or {}
        commits = tuple(sorted({h for hs in files.values() for h in hs}))
        source = "build files"
    return ReleaseFacts(features=tuple(features), sass=sass, ptx=ptx,
                        commits=tuple(c.lower() for c in commits), stamp_source=source)


def check_commit(facts: ReleaseFacts, head: str) -> None:
    """The tag goes on HEAD, so the wheel must have been built from HEAD.

    The binary may hold other 40-hex strings beside the stamp; HEAD among them is a match. With
    build files as the witness (the fallback), there must be exactly one stamp and it must be HEAD.
    """
    stamps = [c for c in facts.commits if re.fullmatch(r"[0-9a-f]{40}", c)]
    if not stamps:
        raise PublishFailed(
            "the wheel carries no commit stamp (MXNET_COMMIT_HASH) in its binary or build files; "
            "cannot prove it was built from HEAD. Reconfigure (CMake refreshes the stamp) and rebuild")
    if head in stamps and (facts.stamp_source == "binary" or len(stamps) == 1):
        return
    shown = ", ".join(s[:12] for s in stamps[:4])
    raise PublishFailed(
        f"the wheel's commit stamp ({facts.stamp_source}: {shown}) is not HEAD {head[:12]}: tagging "
        "HEAD would name the wrong source. Check out the commit the wheel came from, or reconfigure "
        "and rebuild from HEAD")


# --------------------------------------------------------------------------------------------
# The plan: the exact commands, printed by --dry-run and executed by a real publish
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    name: str
    argv: tuple[str, ...]
    cwd: Path

    def shell(self) -> str:
        return f"cd {shlex.quote(str(self.cwd))} && {shlex.join(self.argv)}"


@dataclass(frozen=True)
class ReleasePlan:
    version: str
    tag: str
    commit: str
    remote: str
    wheel: Path
    notes: str
    commands: tuple[Command, ...] = field(default=())
    #: the run's pin of ``wheel``: checked again right before the upload (after the tag push)
    sha256: str = ""

    def printable(self) -> list[str]:
        """The commands as shell lines, in order (the notes are inside the gh line, quoted)."""
        return [c.shell() for c in self.commands]


_GITHUB_RE = re.compile(r"github\.com[:/]+([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


def github_repo(url: str) -> str | None:
    """``owner/name`` of a GitHub remote URL, so gh targets the repository the tag was pushed to."""
    m = _GITHUB_RE.search(url)
    return f"{m.group(1)}/{m.group(2)}" if m else None


def release_notes(version: str, profile: Profile, facts: ReleaseFacts, branch: str, commit: str,
                  wheel: Path, digest: str, gates: Sequence[str] = (), runs: Sequence[str] = ()) -> str:
    """``runs``: the runs of a split release (tools.release_verify --release-report) the gates
    passed over, each "report (host, date)"; empty for a one-run release."""
    archs = ", ".join(facts.sass) or "none"
    ptx = ", ".join(facts.ptx) or "none"
    return "\n".join([
        f"MXNet {version} ({profile.name} wheel).",
        "",
        f"Features: {', '.join(facts.features)}",
        f"SASS: {archs}",
        f"PTX: {ptx}",
        f"Built from {branch}@{commit}.",
        f"Wheel: {Path(wheel).name} (sha256 {digest})",
        "",
        *([f"Every release gate of the harness passed, over {len(runs)} runs on these identical bytes:",
           *(f"- {r}" for r in runs)] if runs else ["Every release gate of the harness passed in the run "
                                                   "that published it."]),
        *([f"Gates that ran and passed ({len(gates)}):", *(f"- {g}" for g in gates)] if gates else []),
    ])


def plan_release(state: RepoState, release: ReleaseVersion, profile: Profile, facts: ReleaseFacts,
                 wheel: Path, *, gates: Iterable[str] = (), digest: str | None = None,
                 assets: Iterable[Path] = (), runs: Sequence[str] = ()) -> ReleasePlan:
    """The tag, push and release commands for this wheel (nothing is run here).

    ``digest`` is the sha256 the run pinned for the wheel (build_steps.pinning); the notes carry it.
    ``assets`` are uploaded beside the wheel (the run's review page, build_steps.report.review_page).
    """
    wheel = Path(wheel).resolve()
    gates = list(gates)
    digest = digest or sha256_of(wheel)
    notes = release_notes(release.version, profile, facts, state.branch, state.head, wheel, digest, gates, runs)
    message = (f"MXNet {release.version} ({profile.name}): {', '.join(facts.features)}; "
               f"SASS {' '.join(facts.sass)}; PTX {' '.join(facts.ptx) or 'none'}; "
               f"commit {state.head}")
    gh = ["gh", "release", "create", release.tag, str(wheel), *(str(Path(a).resolve()) for a in assets),
          "--verify-tag",
          "--title", release.tag, "--notes", notes]
    repo = github_repo(state.remote_url)
    if repo:
        gh += ["--repo", repo]
    commands = (
        Command("tag", ("git", "tag", "-a", release.tag, "-m", message, state.head), state.repo),
        Command("push", ("git", "push", state.remote, f"refs/tags/{release.tag}"), state.repo),
        Command("release", tuple(gh), state.repo),
    )
    return ReleasePlan(version=release.version, tag=release.tag, commit=state.head,
                       remote=state.remote, wheel=wheel, notes=notes, commands=commands, sha256=digest)


def undo_text(plan: ReleasePlan, done: list[str], failed: str) -> str:
    """What exists after ``done`` steps succeeded and ``failed`` did not, and how to undo it."""
    repo = shlex.quote(str(plan.commands[0].cwd))
    tag, remote = shlex.quote(plan.tag), shlex.quote(plan.remote)
    exists, undo = [], []
    if failed == "release":
        exists.append(f"the tag {plan.tag} on {plan.remote} and locally; the GitHub release may "
                      f"exist partially (check: gh release view {tag})")
        undo += [f"gh release delete {tag} --yes   # only if it exists",
                 f"git -C {repo} push {remote} --delete refs/tags/{tag}",
                 f"git -C {repo} tag -d {tag}"]
        retry = "or keep the tag and retry only the release: " + plan.commands[2].shell()
    elif failed == "push":
        exists.append(f"the local tag {plan.tag}; the remote {plan.remote} may or may not have it "
                      f"(check: git -C {repo} ls-remote --tags {remote} refs/tags/{tag})")
        undo += [f"git -C {repo} push {remote} --delete refs/tags/{tag}   # only if it is there",
                 f"git -C {repo} tag -d {tag}"]
        retry = "or fix the remote and push again: " + plan.commands[1].shell()
    elif failed == "upload":
        exists.append(f"the tag {plan.tag} (local and on {plan.remote}); no GitHub release")
        undo += [f"git -C {repo} push {remote} --delete refs/tags/{tag}", f"git -C {repo} tag -d {tag}"]
        retry = ""
    elif failed == "tag":
        exists.append("nothing: no tag, no push, no release was made")
        retry = ""
    else:  # the release was made; only the URL lookup failed
        exists.append(f"the tag {plan.tag} (local and on {plan.remote}) and the GitHub release")
        retry = ""
    lines = ["Now exists: " + "; ".join(exists) + "."]
    if undo:
        lines.append("To undo:\n  " + "\n  ".join(undo))
    if retry:
        lines.append(retry)
    return "\n".join(lines)


Runner = Callable[[Command], subprocess.CompletedProcess[str]]


def _run(cmd: Command) -> subprocess.CompletedProcess[str]:
    """Run one command of the plan. git goes through gitops (the tree's hooks, fsmonitor and
    remote programs never run); ``gh`` gets gitops' environment too, for the git it may start,
    with its own HOME (its login), and asks the credential helper the harness chose for the push."""
    argv = list(cmd.argv)
    if argv[:2] == ["git", "push"]:
        return gitops.push(Path(cmd.cwd), argv[2], *argv[3:], credential_helper=_gh_credential_helper(),
                           helper_env=_gh_login_env())
    if argv[:1] == ["git"]:
        return gitops.run(Path(cmd.cwd), *argv[1:], timeout=1800)
    return subprocess.run(argv, cwd=cmd.cwd, capture_output=True, text=True,
                          env={**gitops.git_env(keep_home=True), **_tokens()}, timeout=1800)


def _tokens() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN",
                                                         "GITHUB_ENTERPRISE_TOKEN")}


def _gh_login_env() -> dict[str, str]:
    """What ``gh auth git-credential`` needs under git's empty HOME: the token, or the config dir
    of the operator's ``gh auth login``."""
    home = Path(os.environ.get("HOME") or Path.home())
    config = os.environ.get("GH_CONFIG_DIR") or str(Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "gh")
    return {**_tokens(), "GH_CONFIG_DIR": config}


def _gh_credential_helper() -> str | None:
    """The push's credentials over https: the logged-in ``gh`` this harness found on its own PATH
    (``gh auth git-credential``), never a helper of the tree's config or of the clean git env."""
    exe = shutil.which("gh")
    return f"!{shlex.quote(exe)} auth git-credential" if exe else None


def execute(plan: ReleasePlan, run: Runner = _run) -> str:
    """Run the plan's commands in order; return the release URL (or the tag when gh prints none).

    Stops at the first failure with PublishFailed naming what exists and the undo commands.
    """
    done: list[str] = []  # the names of the commands that succeeded
    for cmd in plan.commands:
        if cmd.name == "release" and plan.sha256:
            # The upload reads the file again, after the tag push: it must still be the pinned bytes.
            now = sha256_of(plan.wheel) if Path(plan.wheel).is_file() else "nothing (the file is gone)"
            if now != plan.sha256:
                raise PublishFailed(
                    f"publish stopped before the upload: {plan.wheel} hashes to {now}, not to the "
                    f"sha256 {plan.sha256} the gates judged; nothing was uploaded.\n"
                    + undo_text(plan, done, "upload"))
        try:
            proc = run(cmd)
            rc, err = proc.returncode, (proc.stderr or proc.stdout or "").strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            rc, err = -1, str(exc)
        if rc != 0:
            raise PublishFailed(
                f"publish step '{cmd.name}' failed (exit {rc}): {cmd.shell()}\n{err}\n"
                + undo_text(plan, done, cmd.name))
        done.append(cmd.name)
        if cmd.name == "release":
            url = next((w for w in (proc.stdout or "").split() if w.startswith("https://")), None)
            return url or plan.tag
    return plan.tag


# --------------------------------------------------------------------------------------------
# The gate's precondition: every other gate of the session passed
# --------------------------------------------------------------------------------------------
def gates_not_passed(expected: Iterable[str], verdicts: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(nodeid, verdict)`` of every expected gate whose verdict is not ``passed``.

    A gate with no verdict at all (it never ran) is reported as ``not run``.
    """
    return [(nodeid, verdicts.get(nodeid, "not run")) for nodeid in expected
            if verdicts.get(nodeid) != "passed"]
