"""The one way the harness runs git, and the git queries the release step needs.

The tree and its ``.git`` are written by untrusted code (a merged PR, a submodule, the wheel's own
tests in a shard sandbox), and git executes programs its config names: ``core.fsmonitor`` on every
index refresh, hooks (``core.hooksPath``, ``pre-push``, ``reference-transaction``), clean/smudge
filters, ``core.sshCommand``, ``remote.*.uploadpack``/``receivepack``, ``credential.helper``,
``core.askPass``, ``gpg.program``, the ``ext::`` transport. A repository's own config cannot be
switched off, so every git command of the harness goes through :func:`run` / :func:`git` here,
which override each key that executes on the command scope (it beats every config file,
and git hands it on to the git processes it starts, e.g. for submodules), and run git in a clean
config environment (:func:`git_env`: no system or global config, an empty HOME, no ``GIT_*`` of
the caller, never prompting). The remote side of a local push gets no command-scope config from
git, so :func:`push` and :func:`remote_tags` name the remote program themselves.
"""
from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import GitError

#: How long a network operation (ls-remote, push) may take before the remote counts as unreachable.
NETWORK_TIMEOUT_S = 60


#: Config keys whose value git executes (or that make it execute something), each set to a value
#: that runs nothing. They go on the command scope, which beats the repository's own config.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),            # runs on every index refresh (status, diff, add)
    ("core.hooksPath", "/dev/null"),        # no hooks at all: /dev/null/<hook> is never a file
    ("core.sshCommand", "ssh -o BatchMode=yes"),
    ("core.askPass", ""),                   # asked for a password before the (disabled) terminal
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),              # an empty value clears every helper configured before it
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("commit.gpgSign", "false"),
    ("diff.external", ""),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("gc.auto", "0"),                       # no background `git gc --auto` (and its hooks)
    ("maintenance.auto", "false"),
    # transports: only https, ssh and local paths; never ext::, fd::, a remote helper, plain http
    ("protocol.allow", "never"),
    ("protocol.https.allow", "always"),
    ("protocol.ssh.allow", "always"),
    ("protocol.file.allow", "always"),
    ("protocol.ext.allow", "never"),
    # whoever owns the tree: it is untrusted either way, and nothing of its config executes
    ("safe.directory", "*"),
)

#: Per-driver keys that execute (filter.<name>.clean, diff.<name>.textconv, ...): the drivers a
#: repository defines are looked up (:func:`_driver_overrides`) and each of these set to nothing.
_DRIVER_KEYS = {"filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
                "diff": (("command", ""), ("textconv", "")),
                "merge": (("driver", ""),)}

#: The remote-side programs, named on the command line so ``remote.<name>.uploadpack`` and
#: ``receivepack`` of the tree's config are never used. A local remote's receive-pack runs here,
#: and git passes it none of the command-scope config: it gets its own.
_UPLOAD_PACK = "git-upload-pack"
_RECEIVE_PACK = "git-receive-pack"
_LOCAL_RECEIVE_PACK = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 " \
                      "-c core.alternateRefsCommand= receive-pack"

#: The caller's variables git may see: the identity of a tag (data, nothing executes). Every other
#: GIT_* (GIT_DIR, GIT_SSH, GIT_ASKPASS, GIT_CONFIG_PARAMETERS, GIT_EXEC_PATH, ...) is dropped.
_PASSED_GIT_VARS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                    "GIT_SSH_COMMAND")  # the operator's ssh (a deploy key): it beats core.sshCommand

#: Secrets git never needs (the push's credential helper gets them back, :func:`push`).
_SECRETS = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")


@functools.cache
def _empty_home() -> str:
    """An empty, private directory git sees as HOME and XDG_CONFIG_HOME (no ~/.gitconfig, no
    ~/.config/git/attributes); made once per process, by the harness."""
    return tempfile.mkdtemp(prefix="harness-git-home-")


def operator_identity() -> list[tuple[str, str]]:
    """user.name / user.email from the operator's own (global or system) git config, which the clean
    environment leaves out: read as data, outside any repository (cwd /, no GIT_DIR), with the
    caller's own choice of config files (GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM")}
    found = []
    for key in ("user.name", "user.email"):
        try:
            proc = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True,
                                  cwd="/", env={**env, "GIT_CEILING_DIRECTORIES": "/"}, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            found.append((key, proc.stdout.strip()))
    return found


def _config_env(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Command-scope config as GIT_CONFIG_COUNT/KEY/VALUE (any key, spaces and ``=`` included;
    git passes it on to the git processes it starts, which ``-c`` on our argv alone would not)."""
    pairs = list(pairs)
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def git_env(extra_config: Iterable[tuple[str, str]] = (), keep_home: bool = False) -> dict[str, str]:
    """The environment for git (and for tools that call git, ``gh``): this process's, less every
    ``GIT_*`` and token, with no system or global git config, an empty HOME, never prompting, and
    the :data:`SAFE_CONFIG` overrides (plus ``extra_config``) on the command scope.
    ``keep_home``: HOME stays the caller's (``gh`` reads its login from there)."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("GIT_") or k in _PASSED_GIT_VARS) and k not in _SECRETS}
    if not keep_home:
        env["HOME"] = env["XDG_CONFIG_HOME"] = _empty_home()
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        # never wait for a password or a host-key confirmation: that would hang the release run
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",                  # set and empty: git asks neither it nor core.askPass
        "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND") or "ssh -o BatchMode=yes",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "false",
        "GIT_PROTOCOL_FROM_USER": "0",
        "LC_ALL": "C",
        # `git status` refreshes the index when it can: a run only reads the source tree
        "GIT_OPTIONAL_LOCKS": "0",
    })
    env.update(_config_env([*SAFE_CONFIG, *extra_config]))
    return env


def _driver_overrides(repo: Path) -> list[tuple[str, str]]:
    """Blank every filter/diff/merge driver the repository's config defines (reading config runs
    nothing). Submodules' own drivers are not seen here: status never recurses (``run``)."""
    proc = subprocess.run(["git", "-C", str(repo), "config", "--name-only", "--get-regexp",
                           r"^(filter|diff|merge)\..+\.[a-z]+$"],
                          capture_output=True, text=True, env=git_env(), timeout=60)
    out = []
    for key in sorted(set(proc.stdout.splitlines()) if proc.returncode == 0 else ()):
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[0]
        out += [(f"{section}.{name}.{k}", v) for k, v in _DRIVER_KEYS[section]]
    return out


def _hardened(args: tuple[str, ...]) -> list[str]:
    """``args`` with the flags that keep a subcommand from running the tree's programs."""
    sub, rest = args[0] if args else "", list(args[1:])
    if sub == "status":
        # A submodule's .git file may point at any gitdir (a shard's tests can write it), with
        # drivers of its own this module never saw: compare its HEAD with the pinned commit
        # (read in-process), never run a `git status` inside it.
        return [sub, "--ignore-submodules=dirty", *rest]
    if sub in ("diff", "log", "show", "diff-index", "diff-files", "diff-tree"):
        return [sub, "--no-ext-diff", "--no-textconv", *rest]
    if sub == "ls-remote":
        return [sub, f"--upload-pack={_UPLOAD_PACK}", *rest]
    if sub == "tag":
        return [sub, "--no-sign", *rest] if any(a in ("-a", "--annotate", "-m") for a in rest) else [sub, *rest]
    if sub == "push":
        raise ValueError("gitops.run: push through gitops.push (it names the remote side's program)")
    return [sub, *rest]


def run(repo: Path, *args: str, timeout: float | None = None, extra_config: Iterable[tuple[str, str]] = (),
        keep_home: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo args...`` hardened; the completed process, whatever its exit status."""
    # a tag is made with the operator's identity (else a repo-local one: only data, nothing runs)
    ident = operator_identity() if args[:1] in (("tag",), ("var",)) else []
    config = [*ident, *_driver_overrides(repo), *extra_config]
    return subprocess.run(["git", "--no-optional-locks", "-C", str(repo), *_hardened(args)],
                          capture_output=True, text=True, env=git_env(config, keep_home), timeout=timeout)


def _checked(proc: subprocess.CompletedProcess[str], cmd: list[str]) -> str:
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise GitError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {detail}")
    return proc.stdout


def git(repo: Path, *args: str, timeout: float = NETWORK_TIMEOUT_S) -> str:
    """Run ``git -C repo args...`` and return its stdout; raise GitError on failure."""
    cmd = ["git", "-C", str(repo), *args]
    try:
        proc = run(repo, *args, timeout=timeout)
    except FileNotFoundError:
        raise GitError("git is not installed (not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"`{' '.join(cmd)}` did not finish within {timeout:.0f} s") from None
    return _checked(proc, cmd)


def is_local_url(url: str) -> bool:
    """A remote git reaches on this machine (a path or file://), as git itself tells them apart:
    no ``scheme://`` and no ``host:`` before the first slash."""
    if url.startswith("file://"):
        return True
    return "://" not in url and ":" not in url.split("/", 1)[0]


def push(repo: Path, remote: str, *refspecs: str, timeout: float = 1800,
         credential_helper: str | None = None, helper_env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    """``git push remote refspecs`` hardened: the remote side's program named here (a local
    remote's without hooks), and ``credential_helper`` (the harness's own choice, e.g. ``gh``'s)
    the only one git may ask, with ``helper_env`` (its token, its config dir) added; the
    completed process, whatever its exit status."""
    url = remote_url(repo, remote, push=True)
    pack = _LOCAL_RECEIVE_PACK if is_local_url(url) else _RECEIVE_PACK
    config = [("credential.helper", credential_helper)] if credential_helper else []
    env = git_env([*_driver_overrides(repo), *config])
    if credential_helper:
        env.update(helper_env or {})
    return subprocess.run(["git", "-C", str(repo), "push", "--no-signed", "--no-verify",
                           f"--receive-pack={pack}", remote, *refspecs],
                          capture_output=True, text=True, env=env, timeout=timeout)


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
    """Porcelain lines of modified/staged tracked paths (untracked files do not count); a
    submodule with changes inside it is `` M path``, as git's own recursion would say."""
    out = git(repo, "status", "--porcelain", "--untracked-files=no")
    lines = [line for line in out.splitlines() if line.strip()]
    said = {line[3:] for line in lines}
    return lines + [f" M {p}" for p in dirty_submodules(repo) if p not in said]


def dirty_submodules(repo: Path, depth: int = 4) -> list[str]:
    """Checked-out submodules (and theirs, ``depth`` levels) with tracked changes inside, as paths
    relative to ``repo``. Each is asked by its own hardened ``status`` (its .git file may point at
    any gitdir: its drivers are looked up there), never by git's recursion, which would run the
    submodule's config with only our environment's overrides."""
    out = git(repo, "ls-files", "--stage", "-z")
    found = []
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if not meta.startswith("160000 ") or not (Path(repo) / path / ".git").exists():
            continue
        sub = Path(repo) / path
        if git(sub, "status", "--porcelain", "--untracked-files=no").strip() or \
                (depth > 0 and dirty_submodules(sub, depth - 1)):
            found.append(path)
    return found


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


def remote_url(repo: Path, remote: str, push: bool = False) -> str:
    """The URL git reaches ``remote`` at (``insteadOf`` rules applied; ``push``: the push URL)."""
    try:
        return git(repo, "remote", "get-url", *(["--push"] if push else []), remote).strip()
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
