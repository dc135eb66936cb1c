"""Issue 29, items 3 and 4: each attack that got a publish verdict, done for real, refused by name.

Every attack here loads code that would rewrite the verdicts (a conftest.py, a PYTEST_PLUGINS module,
an installed distribution's pytest11 entry point, a rerun plugin), aliases the gate ids, narrows
the shards or forges the release report. Each selftest asserts that the attack had no effect: the
attacker's code was never imported (it leaves a mark when it is), nothing was tagged or released,
and the run's message names what was refused.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from build_steps.release_manifest import load_manifest
from build_steps.release_report import harness_version, write_report
from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_publish import other_gates_source, report_content

SCRIPT = Path(sys.executable).parent / "mxnet-release"


@pytest.fixture(autouse=True)
def _restore_env():
    # _gates_with sets the attack's variables for the child runs: none may leak into later tests
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)

#: What the issue's attacker put in the tree: every failed report becomes a pass.
FORGING_PLUGIN = '''
import os, pathlib, pytest
pathlib.Path(os.environ["ATTACK_MARK"]).write_text("imported")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    return report
'''


@pytest.fixture
def mark(tmp_path, monkeypatch) -> Path:
    """The file the attacker's code writes when it is imported (inherited by child runs)."""
    path = tmp_path / "attack-ran"
    monkeypatch.setenv("ATTACK_MARK", str(path))
    return path


@pytest.fixture
def tree(tmp_path) -> Path:
    """A directory holding the attacker's conftest.py, and files a path option could name."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "conftest.py").write_text(FORGING_PLUGIN)
    (root / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\n")
    (root / "shards.toml").write_text("")
    with zipfile.ZipFile(root / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl", "w") as zf:
        zf.writestr("mxnet/__init__.py", "")
    return root


def _run(cmd, cwd, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


_PATH_OPTIONS = [("--mxnet-src", "."), ("--build-dir", "."), ("--venv-dir", "."), ("--find-links", "."),
                 ("--acceptance-dir", "."), ("--wheel", "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl"),
                 ("--cmake-cache", "CMakeCache.txt"), ("--shards-file", "shards.toml")]


@pytest.mark.parametrize("option, value", _PATH_OPTIONS, ids=[o for o, _ in _PATH_OPTIONS])
def test_a_path_option_in_two_words_never_imports_a_conftest(option, value, tree, mark, tmp_path):
    # The spelling: `--mxnet-src /path/to/tree` (two words), through both entry points.
    for cmd in ([SCRIPT], [sys.executable, "-m", "pytest", "-c", HARNESS_ROOT / "pytest.ini",
                           "--rootdir", HARNESS_ROOT]):
        proc = _run([*cmd, "-p", "no:cacheprovider", "--co", "-q", "-m", "release", option, tree / value],
                    cwd=tmp_path)
        assert not mark.exists(), f"{option} {tree / value}: the tree's conftest.py was imported\n{proc.stdout[-2000:]}"
        assert "PASS" not in proc.stdout


def test_a_positional_dir_with_a_foreign_conftest_is_refused_before_import(tree, mark, tmp_path):
    proc = _run([sys.executable, "-m", "pytest", "-c", HARNESS_ROOT / "pytest.ini", "--rootdir", HARNESS_ROOT,
                 "-p", "no:cacheprovider", "-m", "release", tree], cwd=tmp_path)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"release run refused: {tree / 'conftest.py'} would be imported into the harness" in proc.stderr
    assert not mark.exists()


def _gates_with(pytester, release_repo, *args, env=None, kind="fails"):
    other = pytester.makepyfile(test_other_gates=other_gates_source(kind))
    for key, value in (env or {}).items():
        os.environ[key] = value  # restored by the autouse _restore_env below
    return run_gates(pytester, HARNESS_ROOT / "tests" / "test_publish.py", other,
                     "--mxnet-src", release_repo.repo, "--publish", "--dry-run", "-p", "no:randomly", *args,
                     timeout=300)


def test_pytest_plugins_module_is_refused(pytester, release_repo, mark, tmp_path, gh_standin):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "verdict_forger.py").write_text(FORGING_PLUGIN)
    result = _gates_with(pytester, release_repo, env={"PYTEST_PLUGINS": "verdict_forger",
                                                      "PYTHONPATH": str(tmp_path / "plugins")})
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
    result.stderr.fnmatch_lines(["*release run refused: 1 plugin(s) that are not the harness's*"
                                 "plugin 'verdict_forger': module verdict_forger*"])
    assert "RELEASE" not in result.stdout.str()
    assert gh_standin.calls() == [] and release_repo.local_tags() == []


def test_entry_point_plugin_of_an_installed_distribution_is_refused(pytester, release_repo, mark, tmp_path,
                                                                   gh_standin):
    # A real distribution with a pytest11 entry point, built and installed by pip (into a target
    # dir on PYTHONPATH, so the shared venv is left as it was).
    src = tmp_path / "dist-src"
    src.mkdir()
    (src / "verdict_forger_ep.py").write_text(FORGING_PLUGIN)
    (src / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "pytest-verdict-forger"
        version = "0.1"
        [project.entry-points.pytest11]
        verdict_forger = "verdict_forger_ep"
        [tool.setuptools]
        py-modules = ["verdict_forger_ep"]
    '''))
    target = tmp_path / "site"
    proc = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                 "--target", target, src], cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list(target.glob("pytest_verdict_forger-0.1.dist-info/entry_points.txt"))
    # Installed, it is never loaded: the harness's ini turns entry-point autoloading off (issue 40),
    # so the forger is not imported and the other module's failed gate stays failed.
    result = _gates_with(pytester, release_repo, env={"PYTHONPATH": str(target)})
    assert not mark.exists(), "the installed distribution's pytest11 entry point was imported"
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    assert gh_standin.calls() == [] and release_repo.local_tags() == []
    # Loaded by name, it is refused before any gate runs.
    result = _gates_with(pytester, release_repo, "-p", "verdict_forger_ep", env={"PYTHONPATH": str(target)})
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
    result.stderr.fnmatch_lines(["*release run refused:*plugin 'verdict_forger_ep': module verdict_forger_ep*"])
    assert gh_standin.calls() == [] and release_repo.local_tags() == []


FLAKY_GATE = '''
import os, pathlib, pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_gate_that_fails_once():
    counter = pathlib.Path(os.environ["ATTACK_MARK"] + ".attempts")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    assert n > 0, "libmxnet.so has no libopencv_* NEEDED (first attempt)"
'''


def test_rerun_plugin_cannot_make_a_failing_gate_pass(pytester, release_repo, mark, gh_standin):
    import pytest_rerunfailures  # noqa: F401 - the selftest extra installs it: the attack is real
    flaky = pytester.makepyfile(test_flaky_gate=FLAKY_GATE)
    publish_gate = HARNESS_ROOT / "tests" / "test_publish.py"
    # loaded by name: the harness's ini autoloads no installed plugin (issue 40)
    result = run_gates(pytester, publish_gate, flaky, "--mxnet-src", release_repo.repo, "--publish",
                       "--dry-run", "-p", "pytest_rerunfailures", "--reruns=1", timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*release run refused: pytest-rerunfailures (--reruns=1) would rerun failed gates*"])
    assert gh_standin.calls() == [] and release_repo.local_tags() == []
    # Outside a release run the plugin reruns, and the gate table still says FAILED.
    result = run_gates(pytester, publish_gate, flaky, "--mxnet-src", release_repo.repo, "-m", "provenance",
                       "-p", "pytest_rerunfailures", "--reruns=1", timeout=300)
    out = result.stdout.str()
    assert Path(str(mark) + ".attempts").read_text() == "2", out[-3000:]
    assert "FAILED   ::test_gate_that_fails_once  -- rerun after a failure, which counts as a failure" in out, out[-3000:]
    assert "PASSED   ::test_gate_that_fails_once" not in out


def test_aliased_gate_ids_from_another_rootdir_are_refused(pytester, tmp_path, mark):
    # Empty tests whose node ids are the release set's, under a rootdir of their own.
    alias = tmp_path / "alias"
    (alias / "tests").mkdir(parents=True)
    by_file: dict = {}
    for gate in load_manifest("cuda").gates:
        path, _, name = gate.partition("::")
        by_file.setdefault(path, set()).add(name.split("[")[0])
    for path, names in by_file.items():
        body = "import pytest\npytestmark = [pytest.mark.release]\n" + "".join(
            f"\ndef {n}():\n    pass\n" for n in sorted(names))
        (alias / path).write_text(body)
    result = pytester.runpytest_subprocess("-c", HARNESS_ROOT / "pytest.ini", "--rootdir", alias,
                                           "-p", "no:cacheprovider", "-m", "release", alias / "tests",
                                           HARNESS_ROOT / "tests" / "test_publish.py", timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*release run with rootdir {alias}: a release run's gate ids are those of "
                                 f"the harness at {HARNESS_ROOT}*"])
    assert "passed" not in result.stdout.str()


def test_credentials_in_the_verify_run_are_refused(pytester, release_repo, gh_standin):
    result = _gates_with(pytester, release_repo, env={"GH_TOKEN": "ghp_selftest", "TWINE_PASSWORD": "x"})
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*release run refused: credential-shaped variable(s) in its environment: "
                                 "GH_TOKEN, TWINE_PASSWORD*"])
    assert gh_standin.calls() == []
    # Named for the step that needs it, the variable no longer stops the run.
    result = _gates_with(pytester, release_repo, "--credential-for=GH_TOKEN=source",
                         "--credential-for=TWINE_PASSWORD=package", env={"GH_TOKEN": "ghp_selftest",
                                                                         "TWINE_PASSWORD": "x"})
    assert "credential-shaped" not in result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the other gate failed: refused by the gate


# --------------------------------------------------------------------------------------------
# The publish step and its report
# --------------------------------------------------------------------------------------------
def _wheel(directory: Path, payload: str = "") -> Path:
    wheel = directory / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", payload)
        # the publish step reads the version from METADATA too (issue 41 item 5)
        zf.writestr("mxnet-2.0.0+cu13.bw.20260614.1.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: mxnet\nVersion: 2.0.0+cu13.bw.20260614.1\n")
    return wheel


def _publish(report: Path, *args):
    return _run([SCRIPT, "publish", f"--report={report}", *args], cwd=report.parent)


def test_publish_step_publishes_a_genuine_report(release_repo, gh_standin, report_key, tmp_path):
    report = write_report(tmp_path / "release-report.json", report_content(release_repo, _wheel(tmp_path)))
    proc = _publish(report, "--yes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "PUBLISHED https://github.com/example/mxnet/releases/tag/v2.0.0+cu13.bw.20260614.1" in proc.stdout
    assert release_repo.remote_tags() == ["v2.0.0+cu13.bw.20260614.1"]
    created = [c for c in gh_standin.calls() if c[:2] == ["release", "create"]]
    assert len(created) == 1 and created[0][3].endswith(".whl")
    assert oct(report_key.stat().st_mode & 0o777) == "0o600"


def _refused(proc, gh_standin, release_repo, message: str) -> None:
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert message in proc.stderr, proc.stderr
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []
    assert [c for c in gh_standin.calls() if c[:1] == ["release"]] == []


def test_forged_reports_are_refused(release_repo, gh_standin, report_key, tmp_path):
    genuine = report_content(release_repo, _wheel(tmp_path))
    report = write_report(tmp_path / "release-report.json", genuine)
    doc = json.loads(report.read_text())

    # 1. the attacker's wheel put in place of the verified one, the report edited to match
    (tmp_path / "evil").mkdir()
    evil = _wheel(tmp_path / "evil", payload="import os")
    from build_steps.pinning import sha256_of
    doc["content"].update(wheel=str(evil), sha256=sha256_of(evil))
    report.write_text(json.dumps(doc))
    _refused(_publish(report, "--yes"), gh_standin, release_repo, "digest does not match its content")

    # 2. the same, with the digest recomputed the way someone without the key would (plain sha256)
    import hashlib
    doc["digest"] = hashlib.sha256(json.dumps(doc["content"], sort_keys=True, separators=(",", ":"))
                                   .encode()).hexdigest()
    report.write_text(json.dumps(doc))
    _refused(_publish(report, "--yes"), gh_standin, release_repo, "digest does not match its content")

    # 3. a report (genuinely keyed) of a run in which one gate of the set did not pass
    first = load_manifest("cuda").gates[0]
    partial = write_report(tmp_path / "partial.json", report_content(
        release_repo, _wheel(tmp_path), verdicts={**genuine["verdicts"], first: "failed"}))
    _refused(_publish(partial, "--yes"), gh_standin, release_repo,
             f"the report is no whole-release-set PASS: 1 gate(s) of the cuda release set did not pass: {first}")

    # 4. another harness version's report
    other = write_report(tmp_path / "other.json", genuine)
    doc = json.loads(other.read_text())
    doc["content"]["harness"] = "0" * 64
    from build_steps.release_report import _key, digest_of
    doc["digest"] = digest_of(doc["content"], _key(create=False))
    other.write_text(json.dumps(doc))
    _refused(_publish(other, "--yes"), gh_standin, release_repo, "was made by another harness version")
    assert harness_version() != "0" * 64

    # 5. the verified wheel replaced after the verify run
    wheel = Path(genuine["wheel"])
    write_report(tmp_path / "release-report.json", genuine)
    wheel.unlink()
    _wheel(tmp_path, payload="import os  # replaced")
    _refused(_publish(tmp_path / "release-report.json", "--yes"), gh_standin, release_repo,
             "the verify run's gates judged; nothing was tagged")

    # 6. a report made with another key (another host or user)
    report_key.unlink()
    _refused(_publish(tmp_path / "release-report.json", "--yes"), gh_standin, release_repo,
             "no report key at")


# --------------------------------------------------------------------------------------------
# Smaller points of the issue
# --------------------------------------------------------------------------------------------
def test_publish_judges_after_every_gate_under_ff(pytester, release_repo):
    # --ff (cacheprovider's wrapper) moves the gates that failed last time first, and the publish
    # gate has no place to keep: the release is judged by the end of the run (harness.plugins.finish), after
    # every gate, here the failed gate that --ff ran first (issue 47: no reordering wrapper).
    other = pytester.makepyfile(test_other_gates=other_gates_source("fails"))
    args = ("-c", HARNESS_ROOT / "pytest.ini", "--rootdir", HARNESS_ROOT, "-p", "no:randomly",
            "-o", f"cache_dir={pytester.path / '.cache'}", HARNESS_ROOT / "tests" / "test_publish.py", other,
            "--mxnet-src", release_repo.repo, "--publish", "--dry-run", "-v")
    pytester.runpytest_subprocess(*args, timeout=300)
    result = pytester.runpytest_subprocess(*args, "--ff", timeout=300)
    assert "rerun previous 1 failure first" in result.stdout.str()
    import re
    order = [ln for ln in result.outlines if re.search(r"::\S+ (PASSED|FAILED|SKIPPED|ERROR)\s+\[", ln)]
    assert len(order) == 3 and "test_gate_that_fails FAILED" in order[0], order
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*publish refused: * gates of the cuda release set did not pass*",
                                 "*FAILED*::test_gate_that_fails"])
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []


def test_run_dir_parent_made_by_someone_else_is_refused(tmp_path):
    import getpass
    temp = tmp_path / "shared-tmp"
    temp.mkdir()
    parent = temp / f"mxnet-harness-of-{getpass.getuser()}"
    parent.mkdir()
    parent.chmod(0o777)
    if os.getuid() == 0:
        os.chown(parent, 65534, 65534)  # nobody's, as another user would leave it
    (tmp_path / "test_other_gates.py").write_text(other_gates_source("passes"))
    # no --basetemp (pytester passes one): the run makes its dir under the temp dir's parent
    proc = _run([sys.executable, "-m", "pytest", "-c", HARNESS_ROOT / "pytest.ini", "--rootdir", HARNESS_ROOT,
                 "-p", "no:cacheprovider", HARNESS_ROOT / "tests" / "test_publish.py",
                 tmp_path / "test_other_gates.py", "-m", "release"], cwd=tmp_path, env={"TMPDIR": str(temp)})
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"the harness's run dir parent {parent}" in proc.stderr, proc.stderr
    assert "is writable by others (mode 0o777)" in proc.stderr
    if os.getuid() == 0:
        assert "is owned by uid 65534, not by this user (0)" in proc.stderr
    assert list(parent.iterdir()) == [] and "passed" not in proc.stdout


def test_retargeted_wheel_symlink_is_seen(tmp_path):
    from build_steps.pinning import pin_wheel, source_changed
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    good, evil = _wheel(tmp_path / "a"), _wheel(tmp_path / "b", payload="import os")
    link = tmp_path / good.name
    link.symlink_to(good)
    pin = pin_wheel(link, tmp_path / "pin")
    assert source_changed(pin) is None
    link.unlink()
    link.symlink_to(evil)
    why = source_changed(pin)
    assert why and why.startswith(f"{link} was retargeted during the run: it pointed to {good}"), why


def test_copy_file_leaves_no_open_file_under_W_error(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 100_000)
    code = ("import gc, sys; from pathlib import Path; from build_steps.atomic import copy_file; "
            "copy_file(Path(sys.argv[1]), Path(sys.argv[2])); gc.collect()")
    proc = _run([sys.executable, "-W", "error", "-X", "dev", "-c", code, src, tmp_path / "dst.bin"],
                cwd=HARNESS_ROOT)
    assert proc.returncode == 0 and "ResourceWarning" not in proc.stderr, proc.stderr
    assert (tmp_path / "dst.bin").read_bytes() == src.read_bytes()


def test_shards_file_fails_the_override_gate_by_name(pytester, tmp_path):
    # The narrowing: a shard data file with the fork's shard ids pointed at a tiny test
    # file made every shard gate pass. A release run with --shards-file is a development run.
    from build_steps.acceptance.suite import load_suite
    from selftest.fixtures_build import copy_sample_tree
    tree = copy_sample_tree(tmp_path / "sample")
    shards = tmp_path / "narrow.toml"
    fork = (Path(load_suite().source)).read_text()
    shards.write_text(fork)
    result = run_gates(pytester, HARNESS_ROOT / "tests" / "test_build_overrides.py", "-m", "release",
                       f"--mxnet-src={tree}", "--flavor=cpu", f"--shards-file={shards}", timeout=600)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]
    assert "FAILED   tests/test_build_overrides.py::test_no_development_override" in out, out[-3000:]
    assert (f"--shards-file={shards} (a development option): replaces the release set's acceptance shard list"
            in out), out[-3000:]


def test_a_gate_module_that_differs_from_its_manifest_is_refused(monkeypatch):
    # The other half of "matched by node id AND content hash": the harness's own gate module, changed.
    from types import SimpleNamespace

    from build_steps import plugin_policy
    from harness.plugins import plugin_guard
    modules = dict(load_manifest("cuda").modules)
    assert "tests/test_publish.py" in modules and "tests/test_wheel_integrity.py" in modules
    assert plugin_guard._check_gate_modules(SimpleNamespace(stash={})) is None  # as committed: accepted
    monkeypatch.setattr(plugin_policy, "manifest_modules",
                        lambda: {**modules, "tests/test_wheel_integrity.py": "0" * 64})
    with pytest.raises(pytest.UsageError, match=r"gate module\(s\) tests/test_wheel_integrity.py are not the "
                                                 "ones the release manifests recorded"):
        plugin_guard._check_gate_modules(SimpleNamespace(stash={}))


def test_manifest_check_names_a_changed_gate_module():
    import dataclasses

    from build_steps.release_manifest import differences
    committed = load_manifest("cpu")
    changed = dataclasses.replace(committed, modules={**committed.modules, "tests/test_metadata.py": "0" * 64})
    assert differences(changed, committed) == [
        "cpu: the gate modules' sha256 differ from the manifest's (tests/test_metadata.py)"]
