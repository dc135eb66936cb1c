"""Issue 41 item 5: the publish step verifies what it can, and the report key lies where no sandbox looks.

A red team copied ``report.key`` from a sandboxed child (XDG_CONFIG_HOME and
MXNET_RELEASE_REPORT_KEY_FILE could put it outside HOME, where every sandbox sees ``/``) and the
publish step then trusted every field of a report whose digest verified, a tag that differed from
the wheel's version included. Here the attacker holds the key: each forged report is genuinely
keyed, and must still be refused by what the publish step checks itself: the wheel's bytes, its
name and METADATA against the tag and version, the release manifest's gate set, the tree's HEAD.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from build_steps import sandbox
from build_steps.release_manifest import load_manifest
from build_steps.release_report import KEY_ENV, ReportRefused, write_report
from selftest.conftest import HARNESS_ROOT
from selftest.fixtures_publish import RELEASE_VERSION, report_content

SCRIPT = Path(sys.executable).parent / "mxnet-release"
VERSION = RELEASE_VERSION


@pytest.fixture
def report_key(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "key" / "report.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    return path


def _wheel(directory: Path, version: str = VERSION, metadata_version: str | None = None, payload: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"mxnet-{version}-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mxnet/__init__.py", payload)
        zf.writestr(f"mxnet-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: mxnet\nVersion: {metadata_version or version}\n")
    return wheel


def _publish(report: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), "publish", f"--report={report}", "--yes"], cwd=report.parent,
                          capture_output=True, text=True, timeout=300)


def _refused(proc, gh_standin, release_repo, message: str) -> None:
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one clear line
    assert release_repo.local_tags() == [] and release_repo.remote_tags() == []
    assert [c for c in gh_standin.calls() if c[:1] == ["release"]] == []


def test_forged_reports_with_a_stolen_key_are_refused(release_repo, gh_standin, report_key, tmp_path):
    head = release_repo.head
    gates = list(load_manifest("cuda").gates)

    # a tag that is not the version's
    r = write_report(tmp_path / "tag.json", report_content(release_repo, _wheel(tmp_path / "a"),
                                                     release={"tag": "v2.0.0+cu13.bw.20260614.9"}))
    _refused(_publish(r), gh_standin, release_repo, "the report's tag v2.0.0+cu13.bw.20260614.9 is not")

    # a version the wheel does not carry (its file name says another)
    other = "2.0.0+cu13.bw.20260614.7"
    r = write_report(tmp_path / "version.json", report_content(
        release_repo, _wheel(tmp_path / "b"), release={"version": other, "tag": f"v{other}"}))
    _refused(_publish(r), gh_standin, release_repo, f"is not the report's version {other}")

    # another wheel's bytes: the name agrees, its METADATA says another version
    r = write_report(tmp_path / "bytes.json", report_content(
        release_repo, _wheel(tmp_path / "c", metadata_version="1.9.1", payload="import os")))
    _refused(_publish(r), gh_standin, release_repo, "its METADATA says Version 1.9.1")

    # a missing gate, "excused": only a shard gate the tree itself leaves out may be
    missing = next(g for g in gates if "test_acceptance.py" not in g)
    r = write_report(tmp_path / "gate.json", report_content(
        release_repo, _wheel(tmp_path / "d"), verdicts={g: "passed" for g in gates if g != missing},
        gates_passed=[g for g in gates if g != missing], excused=[missing]))
    _refused(_publish(r), gh_standin, release_repo, f"excuses {missing}")

    # a gate of no release set among those said to have passed
    r = write_report(tmp_path / "extra.json", report_content(
        release_repo, _wheel(tmp_path / "e"), gates_passed=[*gates, "tests/test_mine.py::test_ok"]))
    _refused(_publish(r), gh_standin, release_repo, "not in the cuda release set: tests/test_mine.py::test_ok")

    # another commit: the wheel's stamp is not HEAD
    r = write_report(tmp_path / "commit.json", report_content(
        release_repo, _wheel(tmp_path / "f"),
        facts={"features": ["CUDA"], "sass": ["sm_90"], "ptx": [], "commits": ["f" * 40], "stamp_source": "binary"}))
    _refused(_publish(r), gh_standin, release_repo, f"is not HEAD {head[:12]}")

    # and the genuine one still publishes
    r = write_report(tmp_path / "genuine.json", report_content(release_repo, _wheel(tmp_path / "g")))
    proc = _publish(r)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert release_repo.remote_tags() == [f"v{VERSION}"]


def _visible_places(tmp_path: Path) -> list:
    from build_steps.cuda_root import default_cache_dir
    mark = uuid.uuid4().hex[:8]
    return [
        ("MXNET_RELEASE_REPORT_KEY_FILE", Path("/var/tmp") / f"key-{mark}" / "report.key"),
        ("MXNET_RELEASE_REPORT_KEY_FILE", HARNESS_ROOT / f".selftest-key-{mark}" / "report.key"),
        ("MXNET_RELEASE_REPORT_KEY_FILE", default_cache_dir() / f".selftest-key-{mark}" / "report.key"),
        ("XDG_CONFIG_HOME", Path("/var/tmp") / f"cfg-{mark}"),
    ]


def test_a_key_where_a_sandbox_sees_it_is_refused_in_one_line(tmp_path, monkeypatch):
    """Outside HOME, /root, /home and /tmp every sandbox sees ``/``; the checkout and the harness's
    caches are bound into every build sandbox. A key there is refused before it is made or read."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    for var, place in _visible_places(tmp_path):
        monkeypatch.setenv(var, str(place))
        key = place if var == KEY_ENV else place / "mxnet-release" / "report.key"
        with pytest.raises(ReportRefused) as refused:
            write_report(tmp_path / "r.json", {"flavor": "cuda"})
        message = str(refused.value)
        assert "\n" not in message and "a sandboxed step could read it" in message, message
        assert str(key) in message
        assert not key.exists() and not (tmp_path / "r.json").exists()
        monkeypatch.delenv(var)


def test_a_key_outside_the_hidden_places_is_readable_in_the_sandbox(tmp_path):
    """Why the refusal: a key file (0600, the harness's user) at such a place, read from inside
    the real sandbox. As a user the step runs with that uid; as root the file stays closed to
    nobody, but a user run (or a key readable by others) is enough."""
    place = Path("/var/tmp") / f"key-seen-{uuid.uuid4().hex[:8]}"
    place.mkdir()
    try:
        key = place / "report.key"
        key.write_text("k" * 64)
        key.chmod(0o644 if os.geteuid() == 0 else 0o600)  # as root: a key others can read
        saved = (sandbox._State.enabled, sandbox._State.hidden)
        try:
            sandbox.configure(True, hidden=[])
            argv, env = sandbox.wrap(["cat", str(key)], {"PATH": "/usr/bin:/bin"})
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        finally:
            sandbox._State.enabled, sandbox._State.hidden = saved
        assert proc.stdout == "k" * 64
    finally:
        import shutil
        shutil.rmtree(place)
