"""The sandbox every child that runs code of the audited tree or wheel runs in (bubblewrap).

The tree's CMake scripts, custom commands and ``setup.py``, and the wheel's Python code, are
untrusted input: a malicious commit or a compromised dependency must neither see a credential nor
reach the harness's verdicts. So each such child is a ``bwrap`` command line:

- an allow-list environment (build_steps.venv.clean_env, or venv.build_env for the build steps) with
  ``HOME`` an empty private dir;
- its own pid (and ipc) namespace, ``--die-with-parent`` and ``--new-session``: nothing it starts
  outlives it or the harness, detached or not, and it cannot type into the harness's terminal;
- no network (``--unshare-net``) unless the step installs packages (``network=True``);
- the root filesystem read-only; a private ``/tmp``; empty tmpfs over ``/root``, ``/home`` and the
  user's HOME (``~/.netrc``, ``~/.ssh``, ``~/.config/gh`` are not there), over the harness's run
  dir (verdicts, ledger, pin, report) and over its checkout's ``.git``; then the step's inputs
  bound back read-only and its outputs read-write, nothing else writable;
- the GPU's device nodes (``/dev/nvidia*``) bound when present (DESIGN.md: CUDA works in a sandbox
  that binds those);
- no capability, and as root a real unprivileged uid (issue 41 item 1): bwrap started by root keeps
  every capability otherwise (``umount -l /root`` undid the masks, ``mount -o remount,rw /`` made
  the host writable), and a user namespace alone leaves the process root outside (root-owned files
  stay readable). So as root bwrap makes the mounts, then ``setpriv`` drops to ``nobody`` with an
  empty bounding set before the step's command starts; the step's outputs are handed to that uid
  (``hand_over``). As a user bwrap runs unprivileged (a user namespace, no capability).

Whether a sandbox can be made is tested once per process (``check``). Where it cannot, the run is
refused unless it was started with ``--no-sandbox``, a development option that makes the run
unpublishable (build_steps.overrides).
"""
from __future__ import annotations

import functools
import os
import tempfile
import pwd
import shutil
import signal
import stat
import subprocess
import sys
from typing import Any, Collection, Iterable, Mapping, Sequence

#: a path as the callers name it: a Path or its text
PathArg = str | os.PathLike[str]
from pathlib import Path

from . import supervise
from .run_as import sandbox_ids
from .errors import SandboxUnavailable, UsageError

#: This harness's checkout (read-only in every sandbox: the build's interpreter may live in it).
CHECKOUT = Path(__file__).resolve().parent.parent
#: the harness's own sample tree (trusted: it is part of this checkout)
SAMPLE_TREES = CHECKOUT / "selftest" / "sample_mxnet"
#: the only parts of the checkout a step's output may lie in: the sample tree (built in place by the
#: README's main job) and the ignored scratch dir the benches build in
SCRATCH_IN_CHECKOUT = (SAMPLE_TREES, CHECKOUT / ".tmp")
#: the sample tree's build dirs, beside it as every tree's are (<tree>-build, <tree>-build-cpu: ignored)
SAMPLE_BUILD_PREFIX = SAMPLE_TREES.name + "-build"


def _scratch_in_checkout(real: Path) -> bool:
    """``real`` (resolved) is a part of the checkout a step's output may lie in (SCRATCH_IN_CHECKOUT,
    or one of the sample tree's build dirs beside it)."""
    if any(_within(real, ok) for ok in SCRATCH_IN_CHECKOUT):
        return True
    parent = SAMPLE_TREES.parent
    return _within(real, parent) and real != parent and \
        real.relative_to(parent).parts[0].startswith(SAMPLE_BUILD_PREFIX)


class _State:
    #: None: not configured (a plain call from a selftest or a tool): sandbox when possible
    enabled: bool | None = None
    #: paths no sandbox sees (the run dir), set by the harness once per process
    hidden: tuple[Path, ...] = ()


def configure(enabled: bool, hidden: Iterable[PathArg] = ()) -> None:
    """Set once per process by the harness: ``enabled`` is False only under --no-sandbox;
    ``hidden`` are the harness's own dirs (the run dir) that get an empty tmpfs in every sandbox."""
    _State.enabled = bool(enabled)
    _State.hidden = tuple(Path(p).resolve() for p in hidden)


def enabled() -> bool:
    return _State.enabled is not False


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def as_root() -> bool:
    """Whether the sandbox is made by root, which then runs the step as SANDBOX_UID."""
    return os.geteuid() == 0


def _drop_to_user() -> list[str]:
    """The command that starts the step as root's sandbox: setpriv to SANDBOX_UID, no groups, no
    capability left (bounding and inheritable sets emptied; bwrap already set no_new_privs, so no
    setuid file gives one back). bwrap keeps only the three capabilities setpriv needs for that."""
    uid, gid = sandbox_ids()
    return [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


#: what bwrap keeps (as root) until setpriv drops it with the uid: the three setpriv needs, and the
#: two that let bwrap itself --chdir into a step's dir, which is the sandbox uid's and may be 0700
_SETPRIV_CAPS = ["--cap-drop", "ALL", *[a for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP",
                                                       "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH")
                                        for a in ("--cap-add", cap)]]


def hand_over(paths: Iterable[PathArg], skip: Iterable[PathArg] = ()) -> None:
    """As root: make the step's outputs (dirs the harness made for it) the sandbox uid's, so the
    step can write them. Walks without following links (lchown through each dir's fd), changes
    only what root owns, and never a file with other hard links (a link to a file of root's
    elsewhere would be handed over with it), nor into ``skip`` (the masked paths: a tree's .git
    stays its owner's, as git's safe.directory check wants). Refuses the harness's own checkout (but for SCRATCH_IN_CHECKOUT):
    nothing of the harness becomes writable to the step."""
    if not as_root():
        return
    uid, gid = sandbox_ids()
    skipped = {p.resolve() for p in map(Path, skip) if p.exists()}
    # the dir holding a masked .git (a worktree's top) stays its owner's too: git (the harness's,
    # outside) refuses a worktree another uid owns (safe.directory); its files are handed over
    worktrees = {p.parent for p in skipped}
    for top in paths:
        top = Path(top)
        if not top.is_dir() or top.is_symlink():
            continue
        real = top.resolve()
        if (real == CHECKOUT or _within(CHECKOUT, real)
                or (_within(real, CHECKOUT) and not _scratch_in_checkout(real))):
            raise UsageError(f"sandbox: {top} lies in or holds the harness's checkout {CHECKOUT}; the "
                             "step's code would get write access to the harness. Choose a dir outside it")
        if real not in worktrees:
            _chown_if_root(str(real), None, uid, gid)
        for dirpath, dirnames, filenames, dirfd in os.fwalk(real, follow_symlinks=False):
            dirnames[:] = [d for d in dirnames if Path(dirpath, d) not in skipped]
            for name in [*[d for d in dirnames if Path(dirpath, d) not in worktrees], *filenames]:
                _chown_if_root(name, dirfd, uid, gid)


def _chown_if_root(name: str, dirfd: int | None, uid: int, gid: int) -> None:
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        if st.st_uid != 0 or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
            return
        os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        pass  # gone while walked


@functools.lru_cache(maxsize=None)
def probe() -> str | None:
    """None when a sandbox with this module's namespaces starts here, else why not (cached: once
    per process, a few ms)."""
    exe = bwrap_path()
    if exe is None:
        return "bwrap is not installed (Debian/Ubuntu package bubblewrap)"
    try:
        if as_root() and not shutil.which("setpriv"):
            return ("setpriv (util-linux) is not installed: as root the sandbox starts the step as an "
                    "unprivileged uid through it")
        proc = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                               "--new-session", *_caps(), "--", *(_drop_to_user() if as_root() else []),
                               "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot make a user namespace here: {proc.stderr.strip()[-300:] or proc.returncode}"
    return None


@functools.lru_cache(maxsize=None)
def identity() -> dict[str, Any] | None:
    """Who a step runs as, measured inside a sandbox made as the steps' are (the report records it:
    a GPU host's run shows its steps were not root): the harness's euid, the step's uid, gid and
    groups, and its effective capabilities (``CapEff`` in /proc/self/status, hex). None when
    sandboxing is off or no sandbox starts."""
    if not enabled() or probe() is not None:
        return None
    script = "id -u; id -g; id -G; grep '^CapEff:' /proc/self/status"
    try:
        proc = subprocess.run([str(bwrap_path()), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                               "--new-session", *_caps(), "--", *(_drop_to_user() if as_root() else []),
                               "/bin/sh", "-c", script], capture_output=True, text=True, timeout=30)
        uid, gid, groups, caps = proc.stdout.splitlines()[:4]
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return {"harness_euid": os.geteuid(), "step_uid": int(uid), "step_gid": int(gid),
            "step_groups": [int(g) for g in groups.split()], "step_cap_eff": caps.split(":", 1)[1].strip(),
            "via": "bwrap, then setpriv (the harness runs as root)" if as_root() else "bwrap (unprivileged)"}


def _caps() -> list[str]:
    """bwrap's capability arguments: as root, all but what setpriv needs to drop to the sandbox
    uid; as a user all (an unprivileged bwrap gives the step none already: said explicitly)."""
    return list(_SETPRIV_CAPS) if as_root() else ["--cap-drop", "ALL"]


def unavailable_message(why: str) -> str:
    return (f"no sandbox for the tree's and the wheel's code: {why}. Without one, the build's CMake "
            "scripts and the wheel's code would run with this harness's privileges (its environment, "
            "your credential files, its verdicts). Install bubblewrap (apt-get install bubblewrap) and "
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
            "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu); for a development run only, "
            "--no-sandbox runs them unsandboxed (the run cannot publish)")


def check() -> None:
    """Raise SandboxUnavailable when sandboxing is on and no sandbox can be made."""
    if not enabled():
        return
    why = probe()
    if why is not None:
        raise SandboxUnavailable(unavailable_message(why))


def homes() -> list[Path]:
    """Where credential files live: /root, /home and the user's HOME (by env and by passwd)."""
    found = [Path("/root"), Path("/home")]
    for home in (os.environ.get("HOME"), _passwd_home()):
        if home:
            found.append(Path(home))
    return found


def _passwd_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def seen_by_a_sandbox(path: Path, also: Iterable[Path] = ()) -> str | None:
    """Why some sandbox could read ``path`` (None when none can): every sandbox sees ``/`` but the
    homes and ``/tmp`` (HIDDEN_ROOTS), and gets back the checkout, the interpreter's prefix, the
    harness's and the compilers' caches, the installers' caches, and ``also`` (a run's tree, build
    dir, wheel dir). The report key must lie where this says None (issue 41 item 5)."""
    real = Path(os.path.abspath(path))
    try:
        real = real.resolve()
    except OSError:
        pass
    hidden = [h for h in _resolved([*homes(), Path("/tmp")]) if h != Path("/")]
    if not any(_within(real, h) for h in hidden):
        return f"it lies outside {', '.join(map(str, hidden))}, and every sandbox shows the rest of /"
    from .cuda_root import default_cache_dir
    from .launcher import default_sccache_dir
    given = os.environ
    bound = [CHECKOUT, Path(sys.prefix), Path(sys.base_prefix), default_cache_dir(), default_sccache_dir(),
             *[Path(given[v]) for v in ("SCCACHE_DIR", "CCACHE_DIR") if given.get(v)],
             Path(given.get("XDG_CACHE_HOME") or Path.home() / ".cache"), *installer_caches(), *also]
    # every one, made yet or not (a cache dir the first run will make is bound from then on)
    for b in (Path(os.path.abspath(p)).resolve() for p in bound if p):
        if real == b or b in real.parents:
            return f"it lies in {b}, which sandboxed steps are shown"
    return None


def private_home() -> Path:
    """The sandbox's HOME: the user's home path, which is an empty tmpfs inside."""
    return Path(os.environ.get("HOME") or _passwd_home() or "/root")


def path_args(args: Iterable[object]) -> list[Path]:
    """The existing absolute paths among ``args`` (``/x``, ``-DKEY=/x``, ``--opt=/x``): inputs a
    command names that the sandbox must show read-only."""
    found: list[Path] = []
    for arg in map(str, args):
        value = arg.split("=", 1)[1] if "=" in arg else arg
        for part in value.split(";"):
            if part.startswith("/") and os.path.exists(part):
                found.append(Path(part))
    return found


def _resolved(paths: Iterable[PathArg | None]) -> list[Path]:
    out: list[Path] = []
    for given in paths:
        if given is None:
            continue
        p = Path(given)
        if p.exists():
            out.append(p.resolve())
    return out


def _depth(p: Path) -> int:
    return len(p.parts)


def _gpu_devices() -> list[str]:
    dev = Path("/dev")
    return sorted(str(p) for p in dev.glob("nvidia*") if p.exists())


def _mask(path: Path) -> list[str]:
    """Mount arguments that hide ``path``: an empty tmpfs over a dir, /dev/null over a file."""
    return ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]


def command(cmd: Sequence[PathArg], *, writable: Iterable[PathArg] = (), readable: Iterable[PathArg] = (),
            network: bool = False, cwd: PathArg | None = None, masked: Collection[PathArg] = (),
            as_pid_1: bool = False, tmp: Path | None = None) -> list[str]:
    """``cmd`` as a bwrap command line (see the module's docstring). ``writable``: the step's
    outputs (made read-write; they must exist); ``readable``: its inputs under the hidden places
    (/tmp, homes, the run dir); ``masked``: paths inside those that stay hidden (a tree's .git).
    ``cwd`` is where the command starts (default: the first writable). ``as_pid_1``: the command
    is the namespace's init itself (no bwrap reaper), so its CPU time reaches this process's
    RUSAGE_CHILDREN, as the compile record counts it; it then ignores SIGTERM from inside, and
    a stop ends it with SIGKILL (build_steps.processes.stop_tree)."""
    exe = bwrap_path() or "bwrap"
    rw = _resolved(writable)
    ro = _resolved([*readable, sys.prefix, sys.base_prefix, CHECKOUT, *path_args(cmd)])
    hidden = [h for h in _resolved(homes()) if h != Path("/")] + _resolved(_State.hidden)
    ops = []  # (depth, order, args): shallow mounts first, so a deeper one shows through them
    # A private /tmp on the disk TMPDIR names (not a tmpfs in memory): nvcc's and gcc's temporaries
    # land where the user pointed TMPDIR, a full TMPDIR is that filesystem's ENOSPC, and the dir
    # goes with the run's temporary dir (build_steps.supervise) when the run ends.
    ops.append((_depth(Path("/tmp")), 0, ["--bind", str(tmp or private_tmp()), "/tmp"]))
    home = private_home().resolve() if private_home().exists() else private_home()
    for h in dict.fromkeys(hidden):
        # as root the tmpfs is root's: the step (nobody) may write its HOME, sticky like /tmp
        perms = ["--perms", "1777"] if as_root() and h == home else []
        ops.append((_depth(h), 0, [*perms, "--tmpfs", str(h)]))
    # The checkout's .git is hidden (its config may hold a remote's credentials), except from the
    # build of the harness's own sample tree in place (selftest/sample_mxnet, the README's main
    # job), whose commit stamp is read from that .git at configure time.
    own = [p for p in _resolved([*readable, *writable]) if _within(p, SAMPLE_TREES)]
    for m in _resolved([*([] if own else [CHECKOUT / ".git"]), *masked]):
        ops.append((_depth(m), 3, _mask(m)))
    for p in dict.fromkeys(ro):
        if p != Path("/"):
            ops.append((_depth(p), 1, ["--ro-bind", str(p), str(p)]))
    for p in dict.fromkeys(rw):
        ops.append((_depth(p), 2, ["--bind", str(p), str(p)]))
    ops.sort(key=lambda o: (o[0], o[1]))
    argv = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *(["--perms", "1777"] if as_root() else []), "--tmpfs", "/dev/shm"]
    for _d, _o, args in ops:
        argv += args
    if as_root():
        # bwrap (as root) makes a bind's missing parents under a tmpfs mode 0700, root's: open them
        # to the step's uid, which must reach its binds; they hold nothing but the mount points
        for d in _parents_under([Path("/tmp"), *hidden, *_resolved(masked)], [*ro, *rw]):
            argv += ["--chmod", "0755", str(d)]
    # the run dir's tmpfs read-only too (the parts bound back keep their own mode): a write there
    # fails instead of landing in a throwaway tmpfs
    for h in dict.fromkeys(_resolved(_State.hidden)):
        if h not in rw:
            argv += ["--remount-ro", str(h)]
    for dev in _gpu_devices():
        argv += ["--dev-bind", dev, dev]
    start = Path(cwd).resolve() if cwd is not None else (rw[0] if rw else Path("/"))
    argv += ["--chdir", str(start), "--unshare-pid", "--unshare-ipc", "--die-with-parent",
             "--new-session", *(["--as-pid-1"] if as_pid_1 else []), *_caps()]
    if not network:
        argv.append("--unshare-net")
    return argv + ["--", *(_drop_to_user() if as_root() else []), *map(str, cmd)]


def _parents_under(tops: Collection[Path], binds: Collection[Path]) -> list[Path]:
    """The dirs between each tmpfs in ``tops`` and each bind below it (bwrap makes them)."""
    out: dict[Path, None] = {}
    for b in binds:
        for t in tops:
            if b != t and _within(b, t):
                for parent in reversed(b.parents):
                    # a parent that is (or lies in) another bind is that bind's own dir: not bwrap's
                    if parent != t and _within(parent, t) and not any(_within(parent, o) for o in binds):
                        out[parent] = None
    return list(out)


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def private_tmp(tmpdir: str | None = None) -> Path:
    """A fresh dir for one sandbox's /tmp on the filesystem of ``tmpdir`` (the step's TMPDIR, else
    the harness's): inside the run's temporary dir when that is on the same filesystem, else in
    ``tmpdir`` itself, recorded in the run's temporary dir; either way removed with the run
    (build_steps.supervise, also by its watchdog when the run died)."""
    base = Path(tmpdir or tempfile.gettempdir())
    run_tmp = os.environ.get(supervise.RUN_TMP)
    inside = False
    try:
        if run_tmp and Path(run_tmp).is_dir() and Path(run_tmp).stat().st_dev == base.stat().st_dev:
            base, inside = Path(run_tmp), True
    except OSError:
        pass
    made = Path(tempfile.mkdtemp(prefix=supervise.ELSEWHERE_PREFIX, dir=base))
    if not inside:
        supervise.keep_elsewhere(made)  # on another disk: removed with the run all the same
    return made


def wrap(cmd: Sequence[PathArg], env: dict[str, str] | None, *, writable: Collection[PathArg] = (),
         readable: Iterable[PathArg] = (), network: bool = False, cwd: PathArg | None = None,
         masked: Collection[PathArg] = (), as_pid_1: bool = False) -> tuple[Sequence[PathArg], dict[str, str] | None]:
    """``(argv, env)`` to run ``cmd`` with: sandboxed (HOME the sandbox's empty one), or as given
    under --no-sandbox. The one call each spawn point makes."""
    if not enabled():
        return list(cmd), env
    check()
    for p in writable:
        Path(p).mkdir(parents=True, exist_ok=True)
    # the callers' allow-lists (build_steps.venv) already left out every secret-like name
    env = dict(os.environ if env is None else env)
    env["HOME"] = str(private_home())
    if as_root():
        # The step runs as SANDBOX_UID, and git refuses a repository another uid owns ("dubious
        # ownership"): the fork's CMake then stamps MXNET_COMMIT_HASH=Unavailable. Inside the
        # sandbox the sandbox is the boundary, so git there trusts the trees it is shown; the
        # command scope (GIT_CONFIG_COUNT) is one git reads safe.directory from (git >= 2.39).
        n = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
        env.update({"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}": "safe.directory",
                    f"GIT_CONFIG_VALUE_{n}": "*"})
    tmp = private_tmp(env.get("TMPDIR"))
    hand_over([*writable, tmp], skip=masked)
    given = env.get("TMPDIR")
    if not (given and any(_within(Path(given), Path(w)) for w in writable)):
        env["TMPDIR"] = "/tmp"  # the private one on TMPDIR's disk; the host's TMPDIR path is not bound inside
    return command(cmd, writable=writable, readable=readable, network=network, cwd=cwd, masked=masked,
                   as_pid_1=as_pid_1, tmp=tmp), env


def returncode(rc: int, sandboxed: bool | None = None) -> int:
    """A sandboxed child killed by a signal N reaches us as bwrap's exit 128+N: give it back as
    subprocess's -N, so a crash reads as a crash."""
    if (enabled() if sandboxed is None else sandboxed) and rc > 128:
        try:
            signal.Signals(rc - 128)
            return -(rc - 128)
        except ValueError:
            return rc
    return rc


def cache_dirs(env: Mapping[str, str] | None = None) -> tuple[list[Path], list[Path]]:
    """(readable, writable) dirs of the compiler caches and the harness's CUDA cache: the build
    reads the CUDA root there and writes its compiler cache (``env``: the step's additions)."""
    from .cuda_root import default_cache_dir
    from .launcher import default_sccache_dir
    given = {**os.environ, **(env or {})}
    readable = [default_cache_dir()]
    writable = []
    # As root the step runs as SANDBOX_UID and its writable dirs are handed over to it: the
    # invoker's own ccache (~/.cache/ccache, ~/.ccache) must not be, so root's default is a dir of
    # the harness cache that belongs to the sandbox uid (a compile names its own per tree and commit).
    ccache_default = (sandbox_cache("ccache") if as_root() else
                      Path(given.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ccache")
    for var, default in (("SCCACHE_DIR", default_sccache_dir()), ("CCACHE_DIR", ccache_default)):
        d = Path(given.get(var) or default).expanduser()
        d.mkdir(parents=True, exist_ok=True)  # made here: a cache the sandbox made would be lost
        writable.append(d)
    old_ccache = Path.home() / ".ccache"
    if "CCACHE_DIR" not in given and old_ccache.is_dir() and not as_root():
        writable.append(old_ccache)
    return readable, writable


def sandbox_cache(name: str) -> Path:
    """As root: the sandbox uid's own cache ``name`` (pip, uv, ccache) in the harness cache. The
    invoker's caches are root's: handed to the sandbox uid they would change owner, and any later
    tree's step could write what root's own pip reads next."""
    from .cuda_root import default_cache_dir
    d = default_cache_dir() / "sandbox-uid-caches" / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def installer_caches() -> list[Path]:
    """pip's and uv's download caches, when they exist: an install from the index reuses them."""
    if as_root():  # the sandbox uid's own (sandbox_cache), told to pip and uv by build_steps.venv
        return [sandbox_cache("uv"), sandbox_cache("pip")]
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    out = [Path(os.environ["UV_CACHE_DIR"]) if os.environ.get("UV_CACHE_DIR") else base / "uv",
           Path(os.environ["PIP_CACHE_DIR"]) if os.environ.get("PIP_CACHE_DIR") else base / "pip"]
    return [p for p in out if p.is_dir()]
