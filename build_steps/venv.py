"""The throwaway venv: create it, install the wheel with its dependencies, run probes inside it.

Everything that touches MXNet runs in the venv's own interpreter, in a child process, with an
allow-list environment (clean_env: no token or credential of whoever runs the harness reaches the
wheel's code) and so without the loader variables: a wheel that only works because the harness's environment happens to
point at a build tree (LD_LIBRARY_PATH, MXNET_LIBRARY_PATH, PYTHONPATH) must fail here, as it would
on a user's machine. A child also keeps a segfaulting CUDA library from killing the test session.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import urllib.parse
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypedDict

from . import sandbox
from .sandbox import PathArg
from .install_faults import environment_fault
from .development_settings import CREDENTIAL_PATTERNS
from .development_settings import check_pass_env as _check_pass_env
from .errors import EnvironmentFault, StepError, UsageError, WheelNameError, log_tail
from .readers.wheel_name import parse_wheel_name

#: Variables that would let the venv find libraries or modules outside itself (never passed,
#: and refused by --pass-env).
LEAKY_ENV = ("LD_LIBRARY_PATH", "LD_PRELOAD", "MXNET_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME",
             "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV")

#: The allow-list of every child that runs the wheel's code (probes, shards, the install check):
#: the machine's basics, the locale, the GPUs to use and the harness's own variables. Anything
#: else (a CI's tokens, cloud credentials, the user's MXNet tuning) reaches it only by --pass-env.
ALLOWED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ",
               "TMPDIR", "TEMP", "TMP", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
               "NVIDIA_DRIVER_CAPABILITIES", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
ALLOWED_PREFIXES = ("LC_", "MXNET_HARNESS_", "HARNESS_")
#: pip and uv (the venv's install, the shards' test requirements, the package build) also need
#: the proxies, the CA bundle and where their caches are; the wheel's code never gets these.
PIP_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTP_PROXY",
           "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy")
PIP_PREFIXES = ("XDG_",)
#: The invoker's pip and uv configuration never reaches an install (issue 42, item 2): the venv
#: gets what a user's ``pip install`` of the wheel gets from the index the run names
#: (--index-url, --find-links, --no-index), as the CUDA root's install does (build_steps.cuda_lock).
#: A PIP_CONSTRAINT pinning another cuBLAS would otherwise pass the gates on versions no user
#: installs, and a constraints file in a dir the sandbox hides would reject a good wheel.
#: ``PIP_CONFIG_FILE=/dev/null`` turns off every pip.conf (global, user, site), ``--isolated``
#: the rest, ``UV_NO_CONFIG`` uv's own files; the PIP_*/UV_* variables are dropped.
INSTALLER_CONFIG_PREFIXES = ("PIP_", "UV_")
#: Kept: where the caches are and whether uv may go online choose no version. (pip's own two
#: become --cert and --cache-dir: --isolated ignores every PIP_* variable.)
INSTALLER_KEPT = ("PIP_CERT", "PIP_CACHE_DIR", "UV_CACHE_DIR", "UV_OFFLINE")
ISOLATED_INSTALLER_ENV = {"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}
#: The build steps' allow-list beyond clean_env's: the toolchain's own settings (compilers, CUDA,
#: where CMake and pkg-config look, the compiler caches). Secret-like names are dropped whatever.
BUILD_ENV = ("CC", "CXX", "CUDACXX", "CUDAHOSTCXX", "CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT",
             "CMAKE_PREFIX_PATH", "CMAKE_GENERATOR", "PKG_CONFIG_PATH", "LIBRARY_PATH", "CPATH",
             "LD_LIBRARY_PATH", "SOURCE_DATE_EPOCH", "MAKEFLAGS")
BUILD_PREFIXES = ("SCCACHE_", "CCACHE_", "NVCC_")

#: Names that hold secrets: never passed to a child, whatever the allow-list or --pass-env says.
SECRET_PATTERNS = CREDENTIAL_PATTERNS


def is_secret_name(name: str) -> bool:
    import fnmatch
    return any(fnmatch.fnmatchcase(name.upper(), p) for p in SECRET_PATTERNS)


def check_pass_env(names: Iterable[object] | None) -> tuple[str, ...]:
    """``--pass-env NAME`` values, checked against the allow-list (development_settings.toml)."""
    return _check_pass_env(names, leaky=LEAKY_ENV)


#: The probe writes its JSON result to the file named by this variable (stdout stays free for
#: MXNet's own chatter); the last JSON line on stdout is the fallback.
RESULT_ENV = "HARNESS_PROBE_RESULT"


class Box(TypedDict, total=False):
    """A child's sandbox, as sandbox.wrap's keywords (install_box, venv_box)."""
    writable: list[PathArg]
    readable: list[PathArg]
    network: bool
    cwd: Path | None


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    site_packages: Path
    python_version: str
    #: the user's --pass-env names: every child of this venv gets them beside the allow-list
    pass_env: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "python": str(self.python),
                "site_packages": str(self.site_packages), "python_version": self.python_version,
                "pass_env": list(self.pass_env)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Venv":
        return cls(Path(data["root"]), Path(data["python"]), Path(data["site_packages"]),
                   data["python_version"], tuple(data.get("pass_env", ())))

    def env(self, extra: Mapping[str, str] | None = None, *, pip: bool = False) -> dict[str, str]:
        """The environment of a child of this venv (clean_env with this venv's --pass-env)."""
        return clean_env(extra, pass_env=self.pass_env, pip=pip)


def clean_env(extra: Mapping[str, str] | None = None, *, pass_env: Iterable[str] = (),
              pip: bool = False) -> dict[str, str]:
    """The environment of a child that runs the wheel's code (``pip``: of a pip/uv command): the
    allow-list above, the user's ``--pass-env`` names, then ``extra``; never a secret-like name."""
    allowed = set(ALLOWED_ENV) | set(pass_env) | (set(PIP_ENV) | set(INSTALLER_KEPT) if pip else set())
    prefixes = ALLOWED_PREFIXES + (PIP_PREFIXES if pip else ())
    env = {k: v for k, v in os.environ.items()
           if (k in allowed or k.startswith(prefixes)) and k not in LEAKY_ENV and not is_secret_name(k)
           and (not k.startswith(INSTALLER_CONFIG_PREFIXES) or (pip and k in INSTALLER_KEPT))}
    # user site-packages would shadow the venv
    env["PYTHONNOUSERSITE"] = "1"
    if pip:
        env.update(ISOLATED_INSTALLER_ENV)
    env.update({k: v for k, v in (extra or {}).items() if not is_secret_name(k)})
    return env


def build_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a build step's child (configure, compile): clean_env's allow-list plus
    the toolchain's settings; never a secret-like name."""
    env = clean_env()
    env.update({k: v for k, v in os.environ.items()
                if (k in BUILD_ENV or k.startswith(BUILD_PREFIXES)) and not is_secret_name(k)})
    env.pop("PYTHONNOUSERSITE", None)
    env.update({k: v for k, v in (extra or {}).items() if not is_secret_name(k)})
    return env


def _run_logged(cmd: Sequence[PathArg], log: Path, step: str, what: str, env: dict[str, str] | None = None,
                timeout: float = 3600, box: Box | None = None) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as fh:
        fh.write("$ " + " ".join(map(str, cmd)) + "\n")
        fh.flush()
        start = fh.tell()
        try:
            argv: Sequence[PathArg]
            child_env: dict[str, str] | None
            argv, child_env = (sandbox.wrap(cmd, env or clean_env(pip=True), **box) if box is not None
                               else (cmd, env or clean_env(pip=True)))
            proc = subprocess.run(list(map(str, argv)), stdout=fh, stderr=subprocess.STDOUT,
                                  env=child_env, timeout=timeout)
        except FileNotFoundError as exc:
            # a tool of the host is missing: nothing about the wheel was learnt
            raise EnvironmentFault(step, f"{what}: {exc}; the wheel was not judged (install the tool)", log) from None
        except subprocess.TimeoutExpired:
            raise StepError(step, f"{what}: timed out after {timeout:.0f} s", log, log_tail(log)) from None
    if proc.returncode != 0:
        raise install_failure(step, what, log, start, proc.returncode)


def install_failure(step: str, what: str, log: Path, start: int, returncode: int, lines: int = 40) -> StepError:
    """The error of a failed pip/uv install whose output is in ``log`` from byte ``start``: an
    EnvironmentFault (not judged) when that output names a fault of the host, else a StepError."""
    with open(log, "rb") as fh:
        fh.seek(start)
        output = fh.read().decode("utf-8", "replace")
    fault = environment_fault(output)
    if fault is not None:
        return EnvironmentFault(step, f"{what} failed: {fault}. The wheel was not judged: fix the network or "
                                "proxy, or name a reachable index (--index-url=URL, or --find-links=DIR "
                                "--no-index for a local wheelhouse), and re-run", log, log_tail(log, 15))
    return StepError(step, f"{what} failed (exit {returncode})", log, log_tail(log, lines))


def _describe(python: Path) -> tuple[Path, str]:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig, sys, json; print(json.dumps([sysconfig.get_paths()['purelib'], "
                            "'%d.%d' % sys.version_info[:2]]))"],
        capture_output=True, text=True, env=clean_env())
    if out.returncode != 0:
        raise StepError("venv", f"the venv interpreter {python} does not run: {out.stderr.strip()[-400:]}")
    purelib, version = json.loads(out.stdout.strip().splitlines()[-1])
    return Path(purelib), version


def create_venv(venv_dir: Path, python: str | None = None, *, log: Path | None = None,
                pass_env: Iterable[str] = ()) -> Venv:
    """A fresh venv at ``venv_dir`` for ``python`` (default: this interpreter).

    uv is used when it is on PATH (seconds instead of tens of seconds), else ``python -m venv``.
    An existing venv at that path is replaced; a non-empty directory that is not a venv is
    refused, since removing it later would delete someone's files.
    """
    venv_dir = Path(venv_dir).resolve()
    python = python or sys.executable
    log = log or venv_dir.parent / f"{venv_dir.name}-create.log"
    if venv_dir.exists():
        if any(venv_dir.iterdir()) and not (venv_dir / "pyvenv.cfg").exists():
            raise UsageError(f"--venv-dir {venv_dir}: exists, is not empty and is not a venv; "
                             "pass an empty or new directory (the venv is deleted after the run)")
        shutil.rmtree(venv_dir)
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    uv = shutil.which("uv")
    made = False
    if uv:
        # --seed puts pip into the venv too, so the venv stays usable by hand after --keep-venv.
        try:
            _run_logged([uv, "venv", "--seed", "--python", python, venv_dir], log, "venv",
                        f"uv venv with {python}")
            made = True
        except StepError:
            # uv fetches its seed packages from the index: an offline host without them in uv's
            # cache fails here, while the interpreter's own venv module (ensurepip) needs nothing.
            with open(log, "a") as fh:
                fh.write("uv venv failed (offline, no seed packages cached?): falling back to python -m venv\n")
            shutil.rmtree(venv_dir, ignore_errors=True)
    if not made:
        _run_logged([python, "-m", "venv", venv_dir], log, "venv", f"{python} -m venv")
    vpython = venv_dir / "bin" / "python"
    site, version = _describe(vpython)
    return Venv(root=venv_dir, python=vpython, site_packages=site, python_version=version,
                pass_env=tuple(pass_env))


def pip_command(venv: Venv) -> list[str]:
    """``pip install`` for the venv: uv's when available, else the venv's own pip."""
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip", "install", *uv_options(), "--python", str(venv.python)]
    return [str(venv.python), "-m", "pip", "--isolated", "install", *pip_options()]


def _own_caches() -> bool:
    # as root the sandboxed installer runs as the sandbox uid, with caches of its own (never root's)
    return sandbox.as_root() and sandbox.enabled()


def uv_options() -> list[str]:
    """What every ``uv pip`` command of the harness is given after its subcommand: no uv.toml,
    and as root the sandbox uid's own cache (the requirements preflight uses the same)."""
    return ["--no-config", *(["--cache-dir", str(sandbox.sandbox_cache("uv"))] if _own_caches() else [])]


def pip_options() -> list[str]:
    """What every ``pip install`` of the harness is given after ``install`` (with ``--isolated``
    before it): the host's CA bundle and the cache dir, which ``--isolated`` would drop."""
    own = _own_caches()
    cmd = ["--disable-pip-version-check", "--no-input"]
    # a host's CA bundle (a TLS-intercepting proxy) still applies, as for the CUDA wheels: it can
    # refuse a server, never offer another file
    for var, flag in (("PIP_CERT", "--cert"), ("PIP_CACHE_DIR", "--cache-dir")):
        if os.environ.get(var) and not (own and var == "PIP_CACHE_DIR"):
            cmd += [flag, os.environ[var]]
    if own:
        cmd += ["--cache-dir", str(sandbox.sandbox_cache("pip"))]
    return cmd


def ignored_installer_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """The invoker's PIP_*/UV_* variables an install ignores (named in its log)."""
    environ = os.environ if environ is None else environ
    return sorted(k for k in environ if k.startswith(INSTALLER_CONFIG_PREFIXES) and k not in INSTALLER_KEPT)


def index_args(find_links: Iterable[PathArg] = (), index_url: str | None = None,
               no_index: bool = False) -> list[str]:
    """pip's (and uv pip's) index options: where the venv installs come from."""
    args: list[str] = []
    for link in find_links:
        args += ["--find-links", str(link)]
    if index_url:
        args += ["--index-url", index_url]
    if no_index:
        args.append("--no-index")
    return args


def local_index_dirs(find_links: Iterable[PathArg] = (), index_url: str | None = None) -> list[Path]:
    """The directories on this host that the index options name: plain paths, and ``file://`` URLs
    (an offline host's mirror of the index, ``--index-url file:///.../simple``, or a wheelhouse given
    as a URL). The installs run sandboxed, where /tmp and the homes are hidden and only their inputs
    bound back: these are inputs. A remote URL is reached over the network, not bound."""
    dirs: list[Path] = []
    for item in [*find_links, *([index_url] if index_url else [])]:
        text = str(item)
        if text.startswith("file://"):
            dirs.append(Path(urllib.parse.unquote(urllib.parse.urlsplit(text).path)))
        elif "://" not in text:
            dirs.append(Path(text).resolve())
    return dirs


def install(venv: Venv, wheel: Path, *, find_links: Iterable[PathArg] = (), index_url: str | None = None,
            extra_requirements: Iterable[str] = (), test_requirements: Iterable[str] = (), no_deps: bool = False,
            no_index: bool = False, log: Path) -> dict[str, str]:
    """Install ``wheel`` into ``venv`` with its declared dependencies.

    ``test_requirements`` are what the gates need beyond the wheel (onnxruntime: a test-only
    dependency, never an install dependency of the wheel); ``extra_requirements`` are the
    user's (``--extra-requirement``, e.g. ``numpy<1.24`` for mxnet 1.9). They go into the same
    resolver call as the wheel, so a user pin constrains the wheel's own dependencies.
    Index options pass straight through so an offline host can install from a wheelhouse.
    Returns {distribution name (lowercase): version} as installed.
    """
    wheel = Path(wheel).resolve()
    # absolute: the sandbox starts elsewhere than this process
    links: list[PathArg] = [link if "://" in str(link) else Path(link).resolve() for link in find_links]
    cmd = pip_command(venv) + index_args(links, index_url, no_index)
    box = install_box(venv, [wheel, *local_index_dirs(links, index_url)])
    ignored = ignored_installer_settings()
    if ignored:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as fh:
            fh.write(f"the installer runs isolated: the invoker's {', '.join(ignored)} and pip.conf/uv.toml "
                     "files are ignored (name the index with --index-url, --find-links or --no-index)\n")
    if no_deps:
        # Only the wheel itself goes in without dependencies; the gates' own needs still resolve.
        _run_logged(cmd + ["--no-deps", wheel], log, "install", f"pip install --no-deps {wheel.name}",
                    env=venv.env(pip=True), box=box)
        rest: list[PathArg] = [*extra_requirements, *test_requirements]
        if rest:
            _run_logged(cmd + rest, log, "install", "pip install of the extra/test requirements",
                        env=venv.env(pip=True), box=box)
    else:
        _run_logged(cmd + [wheel, *extra_requirements, *test_requirements], log, "install",
                    f"pip install {wheel.name} with its dependencies", env=venv.env(pip=True), box=box)
    return installed_distributions(venv)


def install_box(venv: Venv, inputs: Iterable[PathArg] = ()) -> Box:
    """An install's sandbox (build_steps.sandbox): the venv writable, the wheel and wheelhouses
    read-only, the package index reachable, pip's and uv's caches reused."""
    return {"writable": [venv.root, *sandbox.installer_caches()],
            "readable": [p for p in map(Path, inputs) if p.is_absolute()], "network": True}


def venv_box(venv: Venv, workdir: Path | None = None, readable: Iterable[PathArg] = (),
             writable: Iterable[PathArg] = ()) -> Box:
    """The sandbox of a child that runs the wheel's code: the venv read-only, ``workdir`` (its
    scratch dir) and the output dirs a gate hands it the only things writable, no network."""
    return {"readable": [venv.root, *readable], "writable": [*([workdir] if workdir else []), *writable],
            "cwd": workdir}


def run_venv(venv: Venv, cmd: Sequence[PathArg], *, env: dict[str, str], workdir: Path, readable: Iterable[PathArg] = (),
             writable: Iterable[PathArg] = (), **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` of ``cmd`` (the venv's interpreter running the wheel's code), sandboxed."""
    from .driver_stub import STUB_ENV
    if env and env.get(STUB_ENV):  # the stand-in libcuda.so.1 lives in the run dir, hidden but for this
        readable = [*readable, Path(env[STUB_ENV]).parent]
    argv, child_env = sandbox.wrap(cmd, env, **venv_box(venv, workdir, readable, writable))
    proc = subprocess.run(argv, env=child_env, cwd=str(workdir), **kwargs)
    proc.returncode = sandbox.returncode(proc.returncode)
    return proc


def installed_distributions(venv: Venv) -> dict[str, str]:
    code = ("import json, importlib.metadata as m; print(json.dumps({d.metadata['Name'].lower(): d.version "
            "for d in m.distributions() if d.metadata['Name']}))")
    with tempfile.TemporaryDirectory(prefix="dists-") as tmp:
        out = run_venv(venv, [str(venv.python), "-c", code], env=venv.env(), workdir=Path(tmp),
                       capture_output=True, text=True)
    if out.returncode != 0:
        raise StepError("install", f"cannot list the venv's distributions: {out.stderr.strip()[-400:]}")
    dists: dict[str, str] = json.loads(out.stdout.strip().splitlines()[-1])  # name -> version, as printed
    return dists


_CHECK_INSTALL = r"""
import importlib.util, json, os, sys
spec = importlib.util.find_spec("mxnet")
res = {"origin": spec.origin if spec else None, "prefix": sys.prefix}
if spec:
    pkg = os.path.dirname(os.path.realpath(spec.origin))
    res["package_dir"] = pkg
    res["libmxnet"] = [os.path.join(d, "libmxnet.so") for d in (pkg, os.path.join(pkg, "lib"))
                       if os.path.isfile(os.path.join(d, "libmxnet.so"))]
try:
    import importlib.metadata as md
    res["dist_version"] = md.version("mxnet")
except Exception as exc:  # no dist-info: the package was not pip-installed
    res["dist_version"] = None
    res["dist_error"] = repr(exc)
print(json.dumps(res))
"""


def check_install(venv: Venv, expected_version: str | None) -> dict[str, Any]:
    """Where ``mxnet`` resolves in the venv's own interpreter, and whether that is the venv.

    Does not import mxnet: a CUDA wheel cannot load on a host without a driver, and loading is
    the runtime gates' business. Returns the facts plus ``problems`` (empty when good).
    """
    with tempfile.TemporaryDirectory(prefix="check-install-") as tmp:
        out = run_venv(venv, [str(venv.python), "-c", _CHECK_INSTALL], env=venv.env(), workdir=Path(tmp),
                       capture_output=True, text=True)
    if out.returncode != 0:
        raise StepError("install", f"the install check could not run in {venv.python}: "
                        f"{out.stderr.strip()[-600:]}")
    facts: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])  # what _CHECK_INSTALL prints
    problems: list[str] = []
    site = os.path.realpath(venv.site_packages)
    if not facts.get("origin"):
        problems.append(f"`import mxnet` finds nothing in {venv.python}: the wheel did not install a "
                        "top-level mxnet package (check the wheel's file list)")
    else:
        pkg = facts["package_dir"]
        if not (pkg + os.sep).startswith(site + os.sep):
            problems.append(f"mxnet resolves to {pkg}, outside the venv's site-packages {site}: "
                            "something on sys.path shadows the installed wheel")
        if not facts.get("libmxnet"):
            problems.append(f"libmxnet.so is not in the installed package {pkg} (nor in its lib/): "
                            "the wheel was packaged without the native library")
    if expected_version is not None and facts.get("dist_version") != expected_version:
        from packaging.version import InvalidVersion, Version
        try:
            same = Version(facts.get("dist_version") or "0") == Version(expected_version)
        except InvalidVersion:
            same = False
        if not same:
            problems.append(f"installed mxnet is {facts.get('dist_version')}, expected {expected_version}: "
                            "pip picked up another mxnet (an index or --find-links with a newer one?) "
                            "or the wheel was built with the wrong MXNET_PACKAGE_VERSION")
    facts["problems"] = problems
    return facts


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join((text or "").splitlines()[-lines:])


def run_probe(venv: Venv, probe: Path, args: Sequence[object] = (), timeout: float = 600,
              env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """Run ``probe`` with the venv's interpreter and return the JSON dict it reports.

    Never raises for what the child does: a signal becomes {"crashed": True, "signal": "SIGSEGV"},
    a timeout {"timed_out": True}, a missing result {"no_result": True}; each with the exit
    status and the stderr/stdout tails, so the gate can turn it into a diagnosis.
    """
    if cwd is None:  # a working dir of its own, gone afterwards
        with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
            return run_probe(venv, probe, args, timeout=timeout, env=env, cwd=Path(tmp))
    workdir = Path(cwd)
    workdir.mkdir(parents=True, exist_ok=True)
    result_file = workdir / f"{Path(probe).stem}-{os.getpid()}-{len(os.listdir(workdir))}.json"
    child_env = venv.env({RESULT_ENV: str(result_file), **(env or {})})
    cmd = [str(venv.python), str(probe), *map(str, args)]
    base: dict[str, Any] = {"probe": Path(probe).name, "args": [str(a) for a in args], "command": " ".join(cmd)}
    try:
        # a directory among the args is an output dir the gate made for the probe (the ONNX export)
        proc = run_venv(venv, cmd, env=child_env, workdir=workdir, readable=[probe],
                        writable=[Path(str(a)) for a in args if Path(str(a)).is_dir()],
                        capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return {**base, "ok": False, "timed_out": True, "timeout_s": timeout,
                "stdout_tail": _tail(out), "stderr_tail": _tail(err)}
    base.update(returncode=proc.returncode, stdout_tail=_tail(proc.stdout), stderr_tail=_tail(proc.stderr))
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return {**base, "ok": False, "crashed": True, "signal": name}
    data = None
    if result_file.exists():
        try:
            data = json.loads(result_file.read_text())
        except ValueError:
            data = None
    if data is None:
        for line in reversed(proc.stdout.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                    break
                except ValueError:
                    continue
    if data is None:
        return {**base, "ok": False, "no_result": True}
    return {**base, **data}


def remove_venv(root: Path) -> None:
    """Delete a venv this harness created (it must look like one: pyvenv.cfg)."""
    root = Path(root)
    if (root / "pyvenv.cfg").exists():
        shutil.rmtree(root, ignore_errors=True)


def explain_probe(result: Mapping[str, Any]) -> str | None:
    """Why a probe did not produce a usable result, in words; None when it ran to the end."""
    if result.get("crashed"):
        return (f"the probe {result.get('probe')} was killed by {result.get('signal')} inside the venv's "
                f"interpreter (a crash in a native library).\n--- stderr ---\n{result.get('stderr_tail', '')}")
    if result.get("timed_out"):
        return f"the probe {result.get('probe')} did not finish within {result.get('timeout_s')} s"
    if result.get("no_result"):
        return (f"the probe {result.get('probe')} exited {result.get('returncode')} without a result.\n"
                f"--- stderr ---\n{result.get('stderr_tail', '')}")
    if result.get("import_error"):
        return (f"`import mxnet` fails in the venv (LD_LIBRARY_PATH cleared): {result['import_error']}; "
                "a library libmxnet.so needs is neither bundled, nor reachable through its RUNPATH, nor "
                "provided by a declared dependency")
    origin = result.get("origin") or {}
    if origin and not origin.get("ok", True):
        return ("MXNet did not load from the installed wheel: " + "; ".join(origin.get("problems", []))
                + " (a stale build tree or a system copy wins over the wheel's own files)")
    return None


def expected_version(wheel: Path, override: str | None = None) -> str:
    """The version the installed wheel must report: ``override`` (--package-version), else the
    version in the wheel's file name."""
    if override:
        return override
    try:
        return str(parse_wheel_name(wheel).version)
    except WheelNameError as exc:
        raise UsageError(f"cannot read a version from the wheel name {Path(wheel).name}: {exc.reason}") from None
