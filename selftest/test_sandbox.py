"""The code being verified can neither see a credential nor reach the verdicts (issue 29, items 1-2).

A committed copy of the sample tree turns attacker: its CMakeLists.txt runs ``attack.sh`` at
configure (``execute_process``) and at compile (a ninja custom command), and its package's
``mxnet/__init__.py`` (the wheel's code, run by the runtime gates' probes) does the same from
Python. Each tries, for real, to read ``GH_TOKEN``/``GITHUB_TOKEN``/``AWS_SECRET_ACCESS_KEY`` from
its environment and ``~/.netrc``, ``~/.config/gh/hosts.yml``, ``~/.ssh/id_rsa`` from the HOME the
harness was started with; to write into the harness's checkout and its run dir (the wheel's code
keeps rewriting the run dir's records from a detached process); and to leave a process behind.

The tree writes what it saw into its own output (the build dir); the wheel's code puts it into
its ImportError, which the features gate prints. The same tree run with ``--no-sandbox`` is the
regression: there the files are read, the checkout and the run dir are written and the processes
outlive the run, so each assertion below is shown to catch the attack. The run dir lives outside
/tmp, so only the sandbox's own hiding of it (not its private /tmp) keeps it out of reach.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from build_steps import overrides, sandbox
from build_steps.options import make_options
from selftest.conftest import HARNESS_CACHE, HARNESS_ROOT, host_opencv
from selftest.fixtures_build import copy_sample_tree

pytestmark = pytest.mark.skipif(sandbox.probe() is not None, reason=f"no sandbox here: {sandbox.probe()}")

SECRET_VARS = ("GH_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
CRED_FILES = (".netrc", ".config/gh/hosts.yml", ".ssh/id_rsa")

_ATTACK_SH = r"""#!/bin/sh
# selftest attacker: what this build step can see and write, into its own output "$2"
stage="$1"; out="$2"
: > "$out"
for v in {secret_vars}; do
  eval "val=\${{$v:-}}"
  [ -n "$val" ] && echo "env $v=$val" >> "$out"
done
for f in {cred_paths} "$HOME/.netrc" "$HOME/.config/gh/hosts.yml" "$HOME/.ssh/id_rsa"; do
  [ -r "$f" ] && echo "read $f: $(cat "$f")" >> "$out"
done
for d in {checkout} {run_dir} {run_dir}/harness-shared; do
  echo "FORGED-{mark}" > "$d/attack-$stage-{mark}" 2>/dev/null && echo "wrote $d" >> "$out"
done
setsid sleep {sleep} </dev/null >/dev/null 2>&1 &
echo "attack $stage ran" >> "$out"
"""

_ATTACK_CMAKE = r"""
# selftest attacker: at configure and at compile
execute_process(COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/attack.sh configure ${CMAKE_BINARY_DIR}/attack-configure.txt)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/attack-compile.txt
  COMMAND sh ${CMAKE_SOURCE_DIR}/attack.sh compile ${CMAKE_BINARY_DIR}/attack-compile.txt)
add_custom_target(attack_step DEPENDS ${CMAKE_BINARY_DIR}/attack-compile.txt)
add_dependencies(mxnet attack_step)
"""

_ATTACK_PY = r'''

def _selftest_attack():
    # selftest attacker: the wheel's own code, at import
    import json, os, subprocess, sys
    seen = {{"env": {{}}, "read": {{}}, "wrote": []}}
    for name in {secret_vars!r}:
        if os.environ.get(name):
            seen["env"][name] = os.environ[name]
    for path in {cred_paths!r} + [os.path.expanduser("~/" + f) for f in {cred_files!r}]:
        try:
            with open(path) as fh:
                seen["read"][path] = fh.read()
        except OSError:
            pass
    for d in ({checkout!r}, {run_dir!r}):
        try:
            with open(os.path.join(d, "attack-wheel-{mark}"), "w") as fh:
                fh.write("FORGED-{mark} " + json.dumps(seen, sort_keys=True))
            seen["wrote"].append(d)
        except OSError:
            pass
    subprocess.Popen([sys.executable, "-c", {loop!r}, {run_dir!r}, "attack-loop-{mark}"],
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    raise ImportError("ATTACK-SEEN " + json.dumps(seen, sort_keys=True))


_selftest_attack()
'''

# Keeps rewriting the run's records (the pin, the run-once records) for two minutes.
_LOOP = r"""
import os, sys, time
shared = os.path.join(sys.argv[1], "harness-shared")
for _ in range(600):
    try:
        names = os.listdir(shared)
    except OSError:
        names = []
    for n in names:
        if n.endswith(".json"):
            try:
                with open(os.path.join(shared, n), "w") as fh:
                    fh.write("FORGED-MARK")
            except OSError:
                pass
    time.sleep(0.2)
"""


def _procs_with(needle: str) -> dict[int, str]:
    """pid -> cmdline of the live processes whose command line holds ``needle``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            found[int(entry.name)] = cmdline
    return found


@pytest.fixture
def attack(tmp_path):
    """The attacker's world: a fake HOME with credential files (outside /tmp), secrets in the
    environment, a run dir outside /tmp, and a tree whose build and package attack."""
    mark = uuid.uuid4().hex[:10]
    home = Path(f"/var/tmp/sbx-home-{mark}")
    run_dir = Path(f"/var/tmp/sbx-run-{mark}")
    sleep = f"{3000 + int(mark[:4], 16) % 1000}.{int(mark[4:8], 16) % 97 + 1}"
    for rel in CRED_FILES:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"sentinel-{mark}-file-{Path(rel).name}\n")
    cred_paths = [str(home / rel) for rel in CRED_FILES]

    def edit(src: Path):
        (src / "attack.sh").write_text(_ATTACK_SH.format(
            secret_vars=" ".join(SECRET_VARS), cred_paths=" ".join(cred_paths), checkout=HARNESS_ROOT,
            run_dir=run_dir, mark=mark, sleep=sleep))
        cm = src / "CMakeLists.txt"
        cm.write_text(cm.read_text() + _ATTACK_CMAKE)
        init = src / "python" / "mxnet" / "__init__.py"
        init.write_text(init.read_text() + _ATTACK_PY.format(
            secret_vars=SECRET_VARS, cred_paths=cred_paths, cred_files=list(CRED_FILES),
            checkout=str(HARNESS_ROOT), run_dir=str(run_dir), mark=mark,
            loop=_LOOP.replace("FORGED-MARK", f"FORGED-{mark}")))

    src = copy_sample_tree(tmp_path / "src", edit)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    env.update({name: f"sentinel-{mark}-env-{name}" for name in SECRET_VARS})
    env["HOME"] = str(home)
    # the user's caches stay warm though HOME moved: the compiler cache and uv's downloads
    env.setdefault("MXNET_HARNESS_CACHE", str(HARNESS_CACHE))
    uv_cache = Path.home() / ".cache" / "uv"
    if uv_cache.is_dir():
        env.setdefault("UV_CACHE_DIR", str(uv_cache))
    world = {"mark": mark, "home": home, "run_dir": run_dir, "src": src, "build": tmp_path / "build",
             "env": env, "sleep": sleep}
    yield world
    for pid in {**_procs_with(f"attack-loop-{mark}"), **_procs_with(f"sleep {sleep}")}:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for leftover in HARNESS_ROOT.glob(f"attack-*-{mark}"):
        leftover.unlink()
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(run_dir, ignore_errors=True)


def _run(world, *extra) -> subprocess.CompletedProcess:
    """The harness on the attacking tree: the build chain, the install and the features gate (the
    probe that imports the wheel's code), and the development-override gate."""
    cmd = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir",
           str(HARNESS_ROOT), "-p", "no:cacheprovider",
           str(HARNESS_ROOT / "tests" / "test_runtime_features.py"),
           str(HARNESS_ROOT / "tests" / "test_build_overrides.py"),
           f"--mxnet-src={world['src']}", "--flavor=cpu", "--jobs=2", f"--build-dir={world['build']}",
           *host_opencv([f"--basetemp={world['run_dir']}", *extra])]
    return subprocess.run(cmd, capture_output=True, text=True, env=world["env"], cwd=str(world["src"].parent),
                          timeout=900)


def _forged_in_run_dir(world) -> list[str]:
    """Files of the run dir the attack wrote (its own files, or records it rewrote)."""
    run_dir, needle = world["run_dir"], f"FORGED-{world['mark']}"
    hits = [str(p) for p in run_dir.rglob(f"attack-*-{world['mark']}")]
    shared = run_dir / "harness-shared"
    for p in shared.glob("*.json") if shared.is_dir() else ():
        if needle in p.read_text(errors="replace"):
            hits.append(str(p))
    return hits


def _seen_by_wheel(out: str) -> dict:
    at = out.find("ATTACK-SEEN {")
    assert at >= 0, "the wheel's code did not run in the features probe:\n" + out[-3000:]
    return json.JSONDecoder().raw_decode(out, at + len("ATTACK-SEEN "))[0]


@pytest.mark.slow
def test_the_tree_and_the_wheel_see_no_secret_write_nothing_of_the_harness_and_leave_nothing_running(attack):
    proc = _run(attack)
    out = proc.stdout + proc.stderr
    mark = attack["mark"]
    time.sleep(1.0)  # a leftover would have had time to start its first rewrite
    # the attack ran, at every place it was planted ...
    configure_seen = (attack["build"] / "attack-configure.txt").read_text()
    compile_seen = (attack["build"] / "attack-compile.txt").read_text()
    assert "attack configure ran" in configure_seen and "attack compile ran" in compile_seen
    wheel_seen = _seen_by_wheel(out)
    # ... and saw no secret: not in its environment, not in a credential file
    for seen in (configure_seen, compile_seen, json.dumps(wheel_seen)):
        assert f"sentinel-{mark}" not in seen, seen
    assert f"sentinel-{mark}" not in out
    assert wheel_seen["env"] == {} and wheel_seen["read"] == {}, wheel_seen
    # wrote nothing of the harness's: not its checkout, not its run dir (records unchanged)
    assert not list(HARNESS_ROOT.glob(f"attack-*-{mark}"))
    assert _forged_in_run_dir(attack) == []
    # left nothing running: neither the build's detached sleep nor the wheel's rewriting loop
    assert _procs_with(f"attack-loop-{mark}") == {} and _procs_with(f"sleep {attack['sleep']}") == {}
    # the run itself judged the tree: the features gate failed on the wheel's ImportError, the
    # override gate passed (nothing was unsandboxed)
    assert proc.returncode == 1, out[-3000:]
    assert re.search(r"FAILED\s+\S*test_runtime_features.py::test_feature_matches_profile", out), out[-3000:]
    assert re.search(r"PASSED\s+\S*test_build_overrides.py::test_no_development_override", out), out[-3000:]


@pytest.mark.slow
def test_without_the_sandbox_the_same_tree_reads_and_writes_the_regression(attack):
    """--no-sandbox: the attack succeeds, which is what the test above rules out (the override gate
    names --no-sandbox, test_no_sandbox_is_a_development_option_the_override_gate_names)."""
    proc = _run(attack, "--no-sandbox")
    out = proc.stdout + proc.stderr
    mark = attack["mark"]
    time.sleep(1.0)
    configure_seen = (attack["build"] / "attack-configure.txt").read_text()
    assert f"sentinel-{mark}-file-.netrc" in configure_seen, configure_seen
    # the wheel's code wrote what it read into the harness's checkout
    wheel_note = HARNESS_ROOT / f"attack-wheel-{mark}"
    assert wheel_note.is_file(), out[-3000:]
    assert f"sentinel-{mark}-file-id_rsa" in wheel_note.read_text()
    assert (HARNESS_ROOT / f"attack-configure-{mark}").is_file()
    assert _forged_in_run_dir(attack), "the unsandboxed wheel could not write the run dir?"
    # What the detached processes did (the forged run dir above) happened; they themselves are gone
    # after the run even unsandboxed: the run's supervision (build_steps.supervise) stops every
    # process that carries its mark, a second line of defence beside the sandbox's pid namespace.
    assert not _procs_with(f"attack-loop-{mark}") and not _procs_with(f"sleep {attack['sleep']}")
    # the environment is an allow-list even unsandboxed
    assert f"sentinel-{mark}-env" not in configure_seen + wheel_note.read_text()
    assert out.count("WARNING: --no-sandbox") == 1, out[-3000:]
    # the run's records were forged under it (it may not even finish its report)
    assert proc.returncode != 0, out[-3000:]


def _in_userns_without_mount_namespaces(cmd: list) -> list:
    """``cmd`` as root of a new user namespace whose limit of mount namespaces is 0: bwrap cannot
    make its sandbox there (a host with user namespaces restricted, for real)."""
    return ["unshare", "--user", "--map-root-user", "sh", "-c",
            'echo 0 > /proc/sys/user/max_mnt_namespaces && exec "$@"', "sh", *cmd]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_host_where_no_sandbox_can_be_made_refuses_the_run_naming_the_fix(sample_tree, tmp_path):
    src = sample_tree()
    base = [sys.executable, "-m", "pytest", "-c", str(HARNESS_ROOT / "pytest.ini"), "--rootdir", str(HARNESS_ROOT),
            "-p", "no:cacheprovider", str(HARNESS_ROOT / "tests"), "--co", "-q", "-m", "release",
            f"--mxnet-src={src}", "--flavor=cpu"]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST")}
    refused = subprocess.run(_in_userns_without_mount_namespaces([*base, f"--basetemp={tmp_path / 'a'}"]),
                             capture_output=True, text=True, env=env, timeout=300)
    out = refused.stdout + refused.stderr
    assert refused.returncode == 4, out[-3000:]
    assert "no sandbox for the tree's and the wheel's code: bwrap cannot make a user namespace here" in out
    assert "apt-get install bubblewrap" in out and "--no-sandbox" in out
    allowed = subprocess.run(_in_userns_without_mount_namespaces(
        [*base, "--no-sandbox", f"--basetemp={tmp_path / 'b'}"]), capture_output=True, text=True, env=env,
        timeout=300)
    out = allowed.stdout + allowed.stderr
    assert allowed.returncode == 0, out[-3000:]
    assert out.count("WARNING: --no-sandbox") == 1 and "ENOSPC" in out, out[-3000:]


def test_no_sandbox_is_a_development_option_the_override_gate_names():
    plain = make_options({"flavor": "cpu"})
    assert "--no-sandbox" not in plain.development_options
    assert not any("--no-sandbox" in s for s in overrides.development_option_promises(plain))
    dev = make_options({"flavor": "cpu", "no_sandbox": True})
    assert "--no-sandbox" in dev.development_options
    assert any(s.startswith("--no-sandbox ") for s in overrides.development_option_promises(dev))


def test_the_sandbox_hides_homes_and_the_run_dir_and_shows_only_the_outputs_writable(tmp_path):
    """The command line itself, run for real: a file under HOME and under a hidden run dir are
    absent; an input is readable and read-only; the output is writable; no network device but lo."""
    home_file = Path(os.environ.get("HOME", "/root")) / f".sbx-selftest-{uuid.uuid4().hex[:8]}"
    run_dir = Path(f"/var/tmp/sbx-hidden-{uuid.uuid4().hex[:8]}")
    inp, outd = tmp_path / "in", tmp_path / "out"
    inp.mkdir()
    (inp / "data").write_text("input")
    run_dir.mkdir()
    (run_dir / "verdict.json").write_text("{}")
    home_file.write_text("secret")
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True, hidden=[run_dir])
        script = (f"test ! -e {home_file} && test ! -e {run_dir}/verdict.json && cat {inp}/data && "
                  f"! touch {run_dir}/forged 2>/dev/null && "
                  f"! touch {inp}/x 2>/dev/null && touch {outd}/made && ! touch {HARNESS_ROOT}/x 2>/dev/null "
                  "&& echo NETDEVS=$(grep -c : /proc/net/dev) && echo HOME=$HOME")
        argv, env = sandbox.wrap(["sh", "-c", script], {"PATH": "/usr/bin:/bin", "HOME": "/nowhere"},
                                 readable=[inp], writable=[outd])
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
        home_file.unlink()
        shutil.rmtree(run_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input" in proc.stdout and (outd / "made").exists()
    assert "NETDEVS=1" in proc.stdout  # the network namespace has lo only
    assert f"HOME={sandbox.private_home()}" in proc.stdout


def test_a_crash_inside_the_sandbox_reads_as_a_crash():
    """bwrap reports a child killed by signal N as exit 128+N; the probes and shards judge -N."""
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    try:
        sandbox.configure(True)
        argv, env = sandbox.wrap(["sh", "-c", "kill -SEGV $$"], {"PATH": "/usr/bin:/bin"})
        proc = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
    assert proc.returncode == 128 + signal.SIGSEGV, (proc.returncode, proc.stderr)
    assert sandbox.returncode(proc.returncode, sandboxed=True) == -signal.SIGSEGV
    assert sandbox.returncode(1, sandboxed=True) == 1 and sandbox.returncode(139, sandboxed=False) == 139


def test_the_checkouts_git_is_hidden_but_from_the_in_place_build_of_the_sample_tree(tmp_path):
    """The checkout's .git (whose config may hold a remote's credentials) is hidden from a tree
    outside the checkout, and seen by the README's main job, which builds selftest/sample_mxnet in
    place and stamps the checkout's commit (git at configure time): run for real, both ways."""
    head = (HARNESS_ROOT / ".git" / "HEAD")
    saved = (sandbox._State.enabled, sandbox._State.hidden)
    script = f"cat {head}"
    try:
        sandbox.configure(True, hidden=[])
        seen = {}
        for name, readable in (("tree elsewhere", [tmp_path]), ("sample in place", [sandbox.SAMPLE_TREES])):
            argv, env = sandbox.wrap(["sh", "-c", script], {"PATH": "/usr/bin:/bin"}, readable=readable)
            seen[name] = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        sandbox._State.enabled, sandbox._State.hidden = saved
    if not head.is_file():
        pytest.skip("this checkout's .git is not a directory (a worktree or a submodule)")
    assert seen["tree elsewhere"].returncode != 0, seen["tree elsewhere"].stdout
    assert seen["sample in place"].returncode == 0, seen["sample in place"].stderr
    assert seen["sample in place"].stdout == head.read_text()
