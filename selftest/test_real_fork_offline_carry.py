"""The carry of a built-OpenCV hold on the offline GPU host (issue 46's GPU half): gfortran alone, and
the pinned OpenCV sdist in pieces, through gpu/real_fork_run.sh's verbs, run here for real.

A `--opencv=built` hold does not carry Debian's OpenCV (51 + 30 MB): it carries Debian's gfortran 12
alone (LAPACK ON: the fork's ChooseBlas probes a Fortran compiler, and the host's static OpenBLAS
needs libgfortran) and the 90 MB sdist the harness builds OpenCV from, in pieces under one call's
64 MiB, each checked by a sha256 manifest and the whole by the lock file's sha256 (the harness's
offline add-source path). Each test runs the script in a copy of the checkout, as a device call lays
it, with REAL_FORK_WORK (the host's /tmp/realfork) and MXNET_HARNESS_CACHE in tmp dirs.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from build_steps import configure, opencv_build, sandbox
from build_steps.venv import build_env
from selftest.conftest import HARNESS_ROOT
from selftest.test_real_fork_script import SCRIPT, _checkout

GFORTRAN_DEBS = HARNESS_ROOT / ".opencv" / "gfortran-debs"
RUNTIME_DEBS = HARNESS_ROOT / ".opencv" / "debs"
#: one device call carries at most 64 MiB, the working tree (about 5.3 MB) included
CALL_LIMIT = 64 * 1024 * 1024
TREE_ALLOWANCE = 6_000_000


@pytest.fixture
def gfortran_at():
    """Where gfortran-stash unpacks (REAL_FORK_GFORTRAN; /opt/realfork/gfortran-prefix on the host): outside
    /tmp and the homes, as there, and readable by the sandbox's uid."""
    d = Path(tempfile.mkdtemp(prefix="realfork-gfortran-", dir="/var/tmp"))
    d.chmod(0o755)
    yield d / "gfortran-prefix"
    shutil.rmtree(d, ignore_errors=True)


def _run(root: Path, work: Path, cache: Path, *args: str, timeout: int = 900,
         gfortran: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "REAL_FORK_WORK": str(work), "MXNET_HARNESS_CACHE": str(cache),
           "PYTHON": str(HARNESS_ROOT / ".venv" / "bin" / "python"),
           "REAL_FORK_GFORTRAN": str(gfortran or work / "not-stashed")}
    return subprocess.run(["bash", SCRIPT, *args], cwd=root, capture_output=True, text=True, env=env,
                          timeout=timeout)


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def _cached_sdist() -> Path:
    src = opencv_build.load_source()
    path = opencv_build.default_cache_root() / "sources" / f"{src.sha256}.tar.gz"
    if not path.is_file():
        pytest.skip(f"the pinned sdist is not in {path.parent}: python -m build_steps.opencv_build fetches it")
    return path


def _call(root: Path, carried: list[Path]) -> None:
    """Lay the checkout's .carry as a device call would: only ``carried`` there."""
    shutil.rmtree(root / ".carry", ignore_errors=True)
    (root / ".carry").mkdir()
    for d in carried:
        shutil.copytree(d, root / ".carry" / d.name)


def _stash_one_call_at_a_time(root: Path, tmp_path: Path, name: str, run) -> tuple[list[Path], Path, subprocess.CompletedProcess]:
    """The .carry/NAME-N pieces that `NAME` cut, laid one per device call and stashed with
    `NAME-stash` (``run(verb)``), each call succeeding and saying how many are still to come. Returns
    the pieces (in order), where they were kept, and the last call's result."""
    pieces = sorted((root / ".carry").glob(f"{name}-*"), key=lambda p: int(p.name.split("-")[1]))
    kept = tmp_path / "kept"
    shutil.copytree(root / ".carry", kept)
    got = None
    for n, piece in enumerate(pieces, 1):
        _call(root, [kept / piece.name])
        got = run(f"{name}-stash")
        assert got.returncode == 0, got.stdout + got.stderr
        if n < len(pieces):
            assert f"{n} of {len(pieces)} pieces" in got.stdout, got.stdout
    assert got is not None, f"no .carry/{name}-N pieces were cut"
    return pieces, kept, got


def _damaged_piece_refused(root: Path, kept: list[Path], piece: Path, name: str, go) -> None:
    """Lay ``kept`` as one call's carries with one byte of ``piece``'s part flipped: `NAME-stash`
    refuses in one line naming that part (exit 1)."""
    _call(root, kept)
    target = next((root / ".carry" / piece.name).glob(f"{name}.part-*"))
    data = bytearray(target.read_bytes())
    data[5] ^= 0xFF
    target.write_bytes(bytes(data))
    bad = go(f"{name}-stash")
    assert bad.returncode == 1 and "damaged" in _one_line(bad) and target.name in _one_line(bad)


def _sandboxed_probe(prefix: Path, build_dir: Path) -> subprocess.CompletedProcess:
    """CMake's Fortran probe as the fork's configure runs it: in the project's sandbox with the
    configure step's binds (build_box), the compiler found on PATH (FC is not in the allow-list)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / "probe.f90").write_text("end\n")
    env = build_env({})
    env["PATH"] = f"{prefix}/usr/bin:{env.get('PATH', '/usr/bin:/bin')}"
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[])
        argv, child = sandbox.wrap(["sh", "-c", "command -v gfortran && command -v f95 && gfortran probe.f90 -o probe"], env,
                                   **configure.build_box(None, build_dir, env=env))
        return subprocess.run(argv, env=child, capture_output=True, text=True, timeout=120)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved


def test_the_gfortran_carry_alone_compiles_a_fortran_probe_and_a_damaged_one_is_refused(tmp_path, gfortran_at):
    if not list(GFORTRAN_DEBS.glob("*.deb")) or not list(RUNTIME_DEBS.glob("libgfortran5_*.deb")):
        pytest.skip(f"gfortran .debs absent in {GFORTRAN_DEBS} / {RUNTIME_DEBS}: "
                    "python -m tools.opencv_prefix download-gfortran / download")
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    made = _run(root, work, cache, "gfortran", str(GFORTRAN_DEBS), str(RUNTIME_DEBS))
    assert made.returncode == 0, made.stdout + made.stderr
    carry = root / ".carry" / "gfortran"
    assert sorted(p.name for p in carry.iterdir()) == ["MANIFEST", "gfortran-prefix.tar.xz"]
    # small: gfortran without Debian's OpenCV, beside the largest sdist piece and the tree in one call
    assert _size(carry) < 20_000_000, _size(carry)
    listing = subprocess.run(["tar", "tJf", str(carry / "gfortran-prefix.tar.xz")], capture_output=True,
                             text=True, check=True).stdout
    assert "libopencv" not in listing and "/cc1\n" not in listing and "/lto1\n" not in listing
    assert "gfortran-prefix/usr/lib/x86_64-linux-gnu/libgfortran.so.5" in listing

    # under /tmp (the host's $W), the configure sandbox would hide it: refused in one line
    hidden = _run(root, work, cache, "gfortran-stash", gfortran=work / "gfortran-prefix")
    assert hidden.returncode == 4 and "sandbox hides" in _one_line(hidden)
    assert not (work / "gfortran-prefix").exists()

    stash = _run(root, work, cache, "gfortran-stash", gfortran=gfortran_at)
    assert stash.returncode == 0, stash.stdout + stash.stderr
    probe = work / "probe.o"
    assert probe.read_bytes()[:4] == b"\x7fELF", "the carried gfortran compiled the probe"
    assert os.path.realpath(gfortran_at / "usr/lib/gcc/x86_64-linux-gnu/12/libgfortran.so") \
        == str((gfortran_at / "usr/lib/x86_64-linux-gnu").resolve() / "libgfortran.so.5.0.0")
    # the fork's configure finds and runs it inside its sandbox (as the sandbox's uid when root) ...
    boxed = _sandboxed_probe(gfortran_at, tmp_path / "build")
    assert boxed.returncode == 0, boxed.stdout + boxed.stderr
    # the name CMake's probe tries before gfortran is the carry's too, not this host's /usr/bin/f95
    assert boxed.stdout.splitlines()[:2] == [f"{gfortran_at}/usr/bin/gfortran", f"{gfortran_at}/usr/bin/f95"]
    assert (tmp_path / "build" / "probe").read_bytes()[:4] == b"\x7fELF"
    # ... which it would not under /tmp, where `start-built` would otherwise have had it: there CMake
    # finds another gfortran on PATH (this host's own), or none (the GPU host has none)
    shutil.copytree(gfortran_at, work / "in-tmp", symlinks=True)
    unseen = _sandboxed_probe(work / "in-tmp", tmp_path / "build2")
    assert f"{work}/in-tmp/usr/bin/gfortran" not in unseen.stdout

    # a damaged carry: refused in one line, the stashed prefix left as it was
    body = bytearray((carry / "gfortran-prefix.tar.xz").read_bytes())
    body[len(body) // 2] ^= 0xFF
    (carry / "gfortran-prefix.tar.xz").write_bytes(body)
    before = (gfortran_at / "usr/bin/gfortran-12").stat().st_ino
    bad = _run(root, work, cache, "gfortran-stash", gfortran=gfortran_at)
    assert bad.returncode == 1
    assert "damaged" in _one_line(bad)
    assert (gfortran_at / "usr/bin/gfortran-12").stat().st_ino == before


def test_the_sdist_travels_in_pieces_and_lands_in_the_harness_cache(tmp_path):
    sdist = _cached_sdist()
    src = opencv_build.load_source()
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    made = _run(root, work, cache, "opencv-src", str(sdist))
    assert made.returncode == 0, made.stdout + made.stderr
    pieces = sorted((root / ".carry").glob("opencv-src-*"))
    assert [p.name for p in pieces] == ["opencv-src-1", "opencv-src-2"]
    for p in pieces:
        assert _size(p) + TREE_ALLOWANCE < CALL_LIMIT
    kept = tmp_path / "kept"
    shutil.copytree(root / ".carry", kept)

    # call 2 carries the first piece: kept, nothing in the cache yet
    _call(root, [kept / "opencv-src-1"])
    first = _run(root, work, cache, "opencv-src-stash")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "1 of 2" in first.stdout
    assert not (cache / "opencv" / "sources").exists()

    # a piece left in $W from another cut (the manifest does not name it) takes no part
    (work / "opencv-src-parts" / "opencv-src.tar.gz.part-07").write_bytes(b"left from another cut")
    # call 3 the second piece: reassembled, checked against the lock, put into the harness's cache
    _call(root, [kept / "opencv-src-2"])
    second = _run(root, work, cache, "opencv-src-stash")
    assert second.returncode == 0, second.stdout + second.stderr
    landed = cache / "opencv" / "sources" / f"{src.sha256}.tar.gz"
    assert opencv_build.sha256_of(landed) == src.sha256
    assert not list((cache / "opencv").glob("*/record.json")), "stash only adds the source: nothing built"


def test_a_damaged_piece_is_refused_in_one_line(tmp_path):
    sdist = _cached_sdist()
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    assert _run(root, work, cache, "opencv-src", str(sdist)).returncode == 0
    piece = next((root / ".carry" / "opencv-src-2").glob("opencv-src.tar.gz.part-*"))
    with open(piece, "r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    bad = _run(root, work, cache, "opencv-src-stash")
    assert bad.returncode == 1
    line = _one_line(bad)
    assert "damaged" in line and piece.name in line
    assert not (cache / "opencv" / "sources").exists()


def test_pieces_of_another_archive_are_refused_by_the_lock_files_hash(tmp_path):
    """Pieces whose manifest agrees with them, of an archive that is not the pinned one: the add-source
    path (the lock file's sha256) refuses it, and the cache stays empty."""
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    wrong = os.urandom(3000)
    d = root / ".carry" / "opencv-src-1"
    d.mkdir(parents=True)
    (d / "opencv-src.tar.gz.part-00").write_bytes(wrong)
    (d / "MANIFEST").write_text(f"{hashlib.sha256(wrong).hexdigest()}  opencv-src.tar.gz.part-00\n")
    bad = _run(root, work, cache, "opencv-src-stash")
    assert bad.returncode != 0
    line = _one_line(bad)
    assert "refused" in line and opencv_build.load_source().sha256 in line
    assert not (cache / "opencv" / "sources").exists() or not list((cache / "opencv" / "sources").iterdir())

    # and here, the carry verb refuses to cut pieces of a file that is not the pinned sdist
    other = tmp_path / "other.tar.gz"
    other.write_bytes(wrong)
    cut = _run(root, work, cache, "opencv-src", str(other))
    assert cut.returncode != 0 and "refused" in _one_line(cut)


def test_start_built_passes_opencv_built_and_the_carried_gfortran(tmp_path, gfortran_at):
    """`start-built` composes the run as `start` does, but with --opencv=built (no --opencv-prefix) and
    FC from the gfortran carry; without the carry it stops in one line before anything is launched."""
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    none = _run(root, work, cache, "start-built", "-n", "14")
    assert none.returncode == 4 and "gfortran-stash" in _one_line(none)
    assert not (work / "pytest.cmd").exists()
    # a stand-in prefix whose gfortran is the host's compiler driver, and the host's bwrap
    gf = shutil.which("gfortran") or pytest.skip("no gfortran here to stand in for the carried one")
    for prefix in (gfortran_at, work / "gfortran-prefix"):
        (prefix / "usr" / "bin").mkdir(parents=True)
        (prefix / "usr" / "bin" / "gfortran").symlink_to(gf)
    (work / "bwrap-prefix" / "usr" / "bin").mkdir(parents=True)
    (work / "bwrap-prefix" / "usr" / "bin" / "bwrap").symlink_to(shutil.which("bwrap"))
    under_tmp = _run(root, work, cache, "start-built", gfortran=work / "gfortran-prefix")
    assert under_tmp.returncode == 4 and "sandbox hides" in _one_line(under_tmp)
    nosrc = _run(root, work, cache, "start-built", gfortran=gfortran_at)
    assert nosrc.returncode == 4 and "opencv-src-stash" in _one_line(nosrc)
    # the source in the (tmp) cache; a failed packing ends the detached run before pytest starts
    sdist = _cached_sdist()
    (cache / "opencv" / "sources").mkdir(parents=True)
    (cache / "opencv" / "sources" / sdist.name).symlink_to(sdist)  # a link is not the source
    assert _run(root, work, cache, "start-built", gfortran=gfortran_at).returncode == 4
    (cache / "opencv" / "sources" / sdist.name).unlink()
    shutil.copyfile(sdist, cache / "opencv" / "sources" / sdist.name)
    (work / "wheelhouse.rc").write_text("1\n")
    proc = _run(root, work, cache, "start-built", "-n", "14", "-m", "release and not acceptance", gfortran=gfortran_at)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cmd = (work / "pytest.cmd").read_text()
    assert "--opencv=built" in cmd and "--opencv-prefix" not in cmd
    assert f"--mxnet-src={work}/mxnet" in cmd and "'-n' '14'" in cmd and "'release and not acceptance'" in cmd
    assert (work / "start.env").read_text().splitlines()[0] == f"FC={gfortran_at}/usr/bin/gfortran"
    for _ in range(30):
        if (work / "pytest.rc").exists():
            break
        subprocess.run(["sleep", "1"])
    assert (work / "pytest.rc").read_text().strip() == "4"


# --- the index mirror (issue 45: an offline release run names it with --index-url) -------------------

def test_the_index_mirror_travels_in_pieces_and_unpacks_as_an_index(tmp_path):
    """`mirror` cuts tools.index_mirror's PEP 503 tree into pieces with a manifest; `mirror-stash` keeps
    each call's piece, and with the last unpacks $W/mirror and names its --index-url; a damaged piece
    is one line, exit 1. (Small wheels of random bytes stand in for the 200 MB download, cut at 1 MB.)"""
    from selftest.test_local_index import _wheel
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for i in range(3):
        w = _wheel(wheels, f"pkg{i}", "1.0")
        with open(w, "ab") as fh:  # bulk after the zip: still a wheel to the index, 1.2 MB to the carry
            fh.write(os.urandom(1_200_000))
    env_run = lambda *a: subprocess.run(  # noqa: E731
        ["bash", SCRIPT, *a], cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "REAL_FORK_WORK": str(work), "MXNET_HARNESS_CACHE": str(cache),
             "PYTHON": str(HARNESS_ROOT / ".venv" / "bin" / "python"), "MIRROR_WHEELS": str(wheels),
             "MIRROR_PIECE_MB": "1"})
    made = env_run("mirror")
    assert made.returncode == 0, made.stdout + made.stderr
    pieces, kept, got = _stash_one_call_at_a_time(root, tmp_path, "mirror", env_run)
    assert len(pieces) >= 3, [p.name for p in pieces]
    assert f"--index-url=file://{work}/mirror/simple" in got.stdout and "3 wheels" in got.stdout, got.stdout
    for i in range(3):
        page = work / "mirror" / "simple" / f"pkg{i}" / "index.html"
        served = page.parent / f"pkg{i}-1.0-py3-none-any.whl"
        assert served.read_bytes() == (wheels / served.name).read_bytes() and "#sha256=" in page.read_text()

    # a damaged piece: named, nothing unpacked over the good mirror
    _call(root, [kept / p.name for p in pieces])
    target = next((root / ".carry" / pieces[-1].name).glob("mirror.tar.part-*"))
    data = bytearray(target.read_bytes())
    data[10] ^= 0xFF
    target.write_bytes(bytes(data))
    shutil.rmtree(work / "mirror-parts")
    bad = env_run("mirror-stash")
    assert bad.returncode == 1 and "damaged" in _one_line(bad) and target.name in _one_line(bad)


# --- the cpu flavor's release run (issue 45): no development option; the wheel's bytes in later holds ---

#: what a run may not carry to be a release run (build_steps/development_settings.toml's options, as a
#: run writes them), checked against the commands start-cpu and audit-cpu compose
def _development_options() -> list[str]:
    from build_steps.development_settings import load_settings
    return [opt for opt, _why in load_settings().options.values()]


def test_start_cpu_builds_first_then_runs_the_release_set_with_no_development_option(tmp_path, gfortran_at):
    """`start-cpu` checks gfortran and the OpenCV source before anything is launched (one line, exit 4),
    then composes two runs on one build dir: the build without the venv (no index needed while the
    mirror travels), then `-m release` with the caller's arguments, naming the mirror with --index-url.
    Neither carries a development option; a mirror that never comes ends the second in one line."""
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    none = _run(root, work, cache, "start-cpu", "-n", "4")
    assert none.returncode == 4 and "gfortran-stash" in _one_line(none)
    gf = shutil.which("gfortran") or pytest.skip("no gfortran here to stand in for the carried one")
    (gfortran_at / "usr" / "bin").mkdir(parents=True)
    (gfortran_at / "usr" / "bin" / "gfortran").symlink_to(gf)
    (work / "bwrap-prefix" / "usr" / "bin").mkdir(parents=True)
    (work / "bwrap-prefix" / "usr" / "bin" / "bwrap").symlink_to(shutil.which("bwrap"))
    nosrc = _run(root, work, cache, "start-cpu", gfortran=gfortran_at)
    assert nosrc.returncode == 4 and "opencv-src-stash" in _one_line(nosrc)
    assert not (work / "pytest.cmd").exists()
    sdist = _cached_sdist()
    (cache / "opencv" / "sources").mkdir(parents=True)
    shutil.copyfile(sdist, cache / "opencv" / "sources" / sdist.name)
    env = {**os.environ, "REAL_FORK_WORK": str(work), "MXNET_HARNESS_CACHE": str(cache),
           "PYTHON": str(HARNESS_ROOT / ".venv" / "bin" / "python"), "REAL_FORK_GFORTRAN": str(gfortran_at),
           "MIRROR_WAIT_S": "3"}
    proc = subprocess.run(["bash", SCRIPT, "start-cpu", "-n", "4"], cwd=root, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build, release = (work / "pytest.cmd").read_text().splitlines()
    assert "-m 'release and not runtime and not acceptance' -k 'not install'" in build
    assert " -m release " in release and release.endswith("'-n' '4'")
    for cmd in (build, release):
        assert "--flavor=cpu" in cmd and f"--index-url=file://{work}/mirror/simple" in cmd
        assert f"--build-dir={work}/build" in cmd and f"--mxnet-src={work}/mxnet" in cmd
        named = [opt for opt in _development_options() if opt in cmd]
        assert not named, f"a development option in the cpu release run: {named}"
        assert "--opencv-prefix" not in cmd and "--no-index" not in cmd and "--find-links" not in cmd
    assert (work / "start.env").read_text().splitlines()[0] == f"FC={gfortran_at}/usr/bin/gfortran"
    for _ in range(120):  # no tree here: the build run is refused, and the mirror never comes
        if (work / "pytest.rc").exists():
            break
        subprocess.run(["sleep", "1"])
    assert (work / "build.rc").read_text().strip() == "4"
    assert (work / "pytest.rc").read_text().strip() == "4"
    assert "no index mirror after 3 s: mirror-stash" in (work / "pytest.log").read_text()


def test_the_wheel_travels_in_pieces_and_is_joined_only_to_its_own_sha256(tmp_path):
    """`wheel-carry` cuts a wheel (a set-aside one too: NAME.whl.FAILED-GATES) into pieces with a manifest
    and the whole's sha256 and name; `wheel-stash` keeps each call's piece and, with the last, joins
    them into $W/wheel/NAME.whl with that sha256. A damaged piece, or pieces whose join is not the
    wheel that was cut, are refused in one line, and no wheel is left behind."""
    from selftest.test_local_index import _wheel
    root, work, cache = _checkout(tmp_path), tmp_path / "realfork", tmp_path / "cache"
    made_dir = tmp_path / "made"
    made_dir.mkdir()
    wheel = _wheel(made_dir, "mxnet", "2.0.0+cpu.linux")
    with open(wheel, "ab") as fh:
        fh.write(os.urandom(2_500_000))
    aside = wheel.with_name(wheel.name + ".FAILED-GATES")
    wheel.rename(aside)
    env = {**os.environ, "REAL_FORK_WORK": str(work), "WHEEL_PIECE_MB": "1"}
    go = lambda *a: subprocess.run(["bash", SCRIPT, *a], cwd=root, capture_output=True,  # noqa: E731
                                   text=True, env=env, timeout=120)
    assert go("wheel-carry", str(tmp_path / "nothing.whl")).returncode == 4
    made = go("wheel-carry", str(aside))
    assert made.returncode == 0, made.stdout + made.stderr
    pieces, kept, got = _stash_one_call_at_a_time(root, tmp_path, "wheel", go)
    assert len(pieces) == 3, [p.name for p in pieces]
    joined = work / "wheel" / wheel.name
    assert joined.read_bytes() == aside.read_bytes()
    assert hashlib.sha256(aside.read_bytes()).hexdigest() in got.stdout

    # a damaged piece: named by the manifest, nothing joined
    shutil.rmtree(work / "wheel")
    shutil.rmtree(work / "wheel-parts")
    _damaged_piece_refused(root, [kept / p.name for p in pieces], pieces[1], "wheel", go)
    assert not list((work / "wheel").glob("*")) if (work / "wheel").exists() else True

    # sound pieces whose join is another wheel (a WHEEL line from another cut): refused, nothing left
    shutil.rmtree(work / "wheel-parts")
    _call(root, [kept / p.name for p in pieces])
    for d in (root / ".carry").glob("wheel-*"):
        (d / "WHEEL").write_text(f"{'0' * 64}  {wheel.name}\n")
    other = go("wheel-stash")
    assert other.returncode == 1 and "refused" in _one_line(other)
    assert not (work / "wheel" / wheel.name).exists() and not list((work / "wheel").glob("*.part"))


def test_audit_cpu_needs_the_wheel_the_index_and_the_tree_and_composes_no_development_option(tmp_path):
    """`audit-cpu` judges the carried wheel's bytes in a later hold: before launching it says in one line
    which of the wheel, the mirror and the tree is missing; then its run selects the provenance gates
    (so its report names the wheel's sha256, which tools.release_verify matches) and the shards."""
    root, work = _checkout(tmp_path), tmp_path / "realfork"
    env = {**os.environ, "REAL_FORK_WORK": str(work), "PYTHON": str(HARNESS_ROOT / ".venv" / "bin" / "python")}
    go = lambda *a: subprocess.run(["bash", SCRIPT, *a], cwd=root, capture_output=True,  # noqa: E731
                                   text=True, env=env, timeout=120)
    first = go("audit-cpu")
    assert first.returncode == 4 and "wheel-stash" in _one_line(first)
    (work / "wheel").mkdir(parents=True)
    (work / "wheel" / "mxnet-2.0.0+cpu.linux-py3-none-any.whl").write_bytes(b"PK")
    assert "mirror-stash" in _one_line(go("audit-cpu"))
    (work / "mirror" / "simple").mkdir(parents=True)
    (work / "mirror" / "simple" / "index.html").write_text("<html></html>")
    assert "setup-cpu" in _one_line(go("audit-cpu"))
    (work / "mxnet" / "tests" / "python").mkdir(parents=True)
    (work / "bwrap-prefix" / "usr" / "bin").mkdir(parents=True)
    (work / "bwrap-prefix" / "usr" / "bin" / "bwrap").symlink_to(shutil.which("bwrap"))
    proc = go("audit-cpu", "--shards=cpu_xop19,dnnl_smoke")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cmd = (work / "audit.cmd").read_text()
    assert "-m 'provenance or acceptance'" in cmd and "--flavor=cpu" in cmd
    assert f"--wheel={work}/wheel/mxnet-2.0.0+cpu.linux-py3-none-any.whl" in cmd and "'--shards=cpu_xop19,dnnl_smoke'" in cmd
    named = [opt for opt in _development_options() if opt in cmd]
    assert not named and "--no-index" not in cmd
    for _ in range(60):  # a two-byte "wheel": the run is refused at once
        if (work / "audit.rc").exists():
            break
        subprocess.run(["sleep", "1"])
    assert (work / "audit.rc").read_text().strip() not in ("", "0")


def _partial_cmake_build(src: Path, build: Path, n: int, done: int) -> list[str]:
    """A real CMake/Ninja tree of ``n`` C objects with only the first ``done`` compiled (a hold whose
    time ended mid-compile). Returns the unfinished objects' paths, as ninja names them."""
    src.mkdir(parents=True)
    for i in range(n):
        (src / f"o{i}.c").write_text(f'#include "common.h"\nint f{i}(void) {{ return COMMON + {i}; }}\n')
    (src / "common.h").write_text("#define COMMON 7\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p C)\n"
        f"add_library(p SHARED {' '.join(f'o{i}.c' for i in range(n))})\n")
    subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build)], check=True, capture_output=True)
    objects = [f"CMakeFiles/p.dir/o{i}.c.o" for i in range(n)]
    subprocess.run(["ninja", "-C", str(build), *objects[:done]], check=True, capture_output=True)
    return objects[done:]


def _planned(build: Path) -> list[str]:
    """What ninja would compile next: the objects of a dry run."""
    out = subprocess.run(["ninja", "-C", str(build), "-n", "-v"], check=True, capture_output=True, text=True).stdout
    return sorted(f"CMakeFiles/p.dir/o{i}.c.o" for i in range(100) if f" -o CMakeFiles/p.dir/o{i}.c.o " in out)


def test_a_build_dir_travels_to_a_later_hold_and_ninja_compiles_only_what_was_unfinished(tmp_path):
    """`build-pack` packs $W/build (here no run is going: nothing to stop), `build-carry` checks the pieces
    that came back and cuts them for the carries, `build-stash` lays them one call at a time into a host
    that has no build dir: ninja then compiles only the objects the first hold had not finished (the
    mtimes and ninja's logs survive the trip), and every finished object comes back byte for byte. A
    build dir already there is never overwritten, and a damaged piece is refused."""
    root, work = _checkout(tmp_path), tmp_path / "realfork"
    build = work / "build"
    unfinished = _partial_cmake_build(work / "src", build, n=8, done=5)
    assert _planned(build) == sorted(unfinished)
    objects = {p.relative_to(build): p.read_bytes() for p in build.rglob("*.o")}
    assert len([o for o in objects if o.parts[:2] == ("CMakeFiles", "p.dir")]) == 5
    (build / "blob").write_bytes(os.urandom(2_500_000))   # pieces enough to carry in several calls
    env = {**os.environ, "REAL_FORK_WORK": str(work), "BUILD_PIECE_MB": "1"}
    go = lambda *a: subprocess.run(["bash", SCRIPT, *a], cwd=root, capture_output=True,  # noqa: E731
                                   text=True, env=env, timeout=300)
    packed = go("build-pack")
    assert packed.returncode == 0, packed.stdout + packed.stderr
    assert f"{len(objects)} objects" in packed.stdout, packed.stdout
    back = tmp_path / "came-back"
    shutil.copytree(work / "build-pack", back)       # what $OUT brings back
    made = go("build-carry", str(back))
    assert made.returncode == 0, made.stdout + made.stderr

    # the later hold: no build dir yet; a build dir that is there is refused, untouched
    keep = tmp_path / "first-hold-build"
    build.rename(keep)
    build.mkdir()
    (build / "mine").write_text("x")
    pieces = sorted((root / ".carry").glob("build-*"), key=lambda p: int(p.name.split("-")[1]))
    saved = tmp_path / "kept"
    shutil.copytree(root / ".carry", saved)
    _call(root, [saved / p.name for p in pieces])
    over = go("build-stash")
    assert over.returncode == 4 and "exists" in _one_line(over), over.stdout + over.stderr
    assert (build / "mine").read_text() == "x"
    shutil.rmtree(build)
    shutil.rmtree(work / "build-parts")

    # one piece a call, as the device calls carry them
    _call(root, [saved / p.name for p in pieces])
    pieces, _kept, got = _stash_one_call_at_a_time(root, tmp_path / "again", "build", go)
    assert len(pieces) == 3 and f"{len(objects)} objects" in got.stdout, got.stdout
    assert _planned(build) == sorted(unfinished)
    assert {p.relative_to(build): p.read_bytes() for p in build.rglob("*.o")} == objects
    done = subprocess.run(["ninja", "-C", str(build)], capture_output=True, text=True)
    assert done.returncode == 0 and f"[{len(unfinished) + 1}/{len(unfinished) + 1}]" in done.stdout, done.stdout

    # a damaged piece: named, nothing laid
    shutil.rmtree(build)
    shutil.rmtree(work / "build-parts")
    _damaged_piece_refused(root, [saved / p.name for p in pieces], pieces[0], "build", go)
    assert not build.exists()
