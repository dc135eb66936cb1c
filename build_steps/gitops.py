"""The one way the harness runs git, and the git queries the release step needs.

Every git command of the harness goes through :func:`run` (the completed process, for callers
that read the exit status themselves) or :func:`git` (stdout, or :class:`GitError` with git's own
message). Both use :func:`git_env`, which never prompts (a publish run is unattended: a remote
that asks for a password is an unreachable remote); commands that run git indirectly (``gh``)
take the same environment.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .errors import HarnessError

#: How long a network operation (ls-remote, push) may take before the remote counts as unreachable.
NETWORK_TIMEOUT_S = 60


class GitError(HarnessError):
    """A git command failed; the message carries the command and git's stderr."""


def git_env() -> dict[str, str]:
    """This process's environment for git (and for tools that call git): never prompting."""
    env = dict(os.environ)
    # Never wait for a password or a host-key confirmation: that would hang the release run.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    env["LC_ALL"] = "C"
    # `git status` refreshes the index when it can: a run only reads the source tree
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def run(repo: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo args...``; the completed process, whatever its exit status."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=git_env(),
                          timeout=timeout)


def git(repo: Path, *args: str, timeout: float = NETWORK_TIMEOUT_S) -> str:
    """Run ``git -C repo args...`` and return its stdout; raise GitError on failure."""
    cmd = ["git", "-C", str(repo), *args]
    try:
        proc = run(repo, *args, timeout=timeout)
    except FileNotFoundError:
        raise GitError("git is not installed (not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"`{' '.join(cmd)}` did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise GitError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {detail}")
    return proc.stdout


def is_git_repo(path: Path) -> bool:
    try:
        git(path, "rev-parse", "--git-dir")
    except GitError:
        return False
    return True


def toplevel(path: Path) -> Path:
    return Path(git(path, "rev-parse", "--show-toplevel").strip())


def head_commit(repo: Path) -> str:
    return git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()


def current_branch(repo: Path) -> str:
    """The branch name, or ``detached`` for a detached HEAD."""
    name = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    return "detached" if name == "HEAD" else name


def tracked_changes(repo: Path) -> list[str]:
    """Porcelain lines of modified/staged tracked paths (untracked files do not count)."""
    out = git(repo, "status", "--porcelain", "--untracked-files=no")
    return [line for line in out.splitlines() if line.strip()]


def committer_ident(repo: Path) -> str:
    """Who an annotated tag would be signed as; GitError when git has no identity configured."""
    return git(repo, "var", "GIT_COMMITTER_IDENT").strip()


def local_tags(repo: Path, pattern: str = "*") -> list[str]:
    out = git(repo, "tag", "--list", pattern)
    return [t.strip() for t in out.splitlines() if t.strip()]


def local_tag_exists(repo: Path, tag: str) -> bool:
    try:
        git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{tag}")
    except GitError:
        return False
    return True


def remote_url(repo: Path, remote: str) -> str:
    try:
        return git(repo, "remote", "get-url", remote).strip()
    except GitError:
        raise GitError(
            f"git remote {remote!r} is not configured in {repo}; pass --remote NAME "
            f"(see `git -C {repo} remote -v`)") from None


def remote_tags(repo: Path, remote: str) -> list[str]:
    """All tag names on ``remote`` (peeled ``^{}`` lines folded). Raises GitError if unreadable.

    Unlike the fork's wrapper, an unreachable remote is an error, not an empty list: the release
    step must not pick a build number or call a tag free without having seen the remote.
    """
    remote_url(repo, remote)
    out = git(repo, "ls-remote", "--tags", "--refs", remote)
    tags = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].startswith("refs/tags/"):
            tags.append(parts[1][len("refs/tags/"):])
    return tags
