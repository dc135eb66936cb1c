"""An offline host's mirror: a package index on disk (PEP 503, ``--index-url=file:///...``).

Issue 45 wants the CPU flavor's release set on the offline GPU host at the release profile, with
no development option; ``--no-index``/``--find-links`` is one (the installs then never resolve from
an index). A mirror of the index users install from, carried as a directory and named with
``--index-url file://...``, is not. The installs run sandboxed, and the sandbox hides ``/tmp`` and
the homes, binding back only its inputs: an index given by URL was not among them, so the
installer could not read the mirror it was told to use. Real parts: wheels written here, a real
PEP 503 tree, a real venv, pip (and uv, where it is installed) in the real sandbox.
"""
from __future__ import annotations

import base64
import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest

from build_steps import requirements_preflight, venv as venv_step
from build_steps.venv import local_index_dirs


def _wheel(dest: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    files = {f"{name}/__init__.py": f"__version__ = {version!r}\n".encode(), f"{info}/METADATA": meta.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def line(n: str, d: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
        return f"{n},sha256={digest},{len(d)}"
    path = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr(f"{info}/RECORD", "\n".join(line(n, d) for n, d in files.items()) + f"\n{info}/RECORD,,\n")
    return path


def _pep503(root: Path, wheels: list[Path]) -> Path:
    """root/simple/<project>/index.html linking each wheel with its sha256, as a mirror serves it."""
    simple = root / "simple"
    projects = {}
    for w in wheels:
        projects.setdefault(w.name.split("-")[0].replace("_", "-").lower(), []).append(w)
    for project, files in projects.items():
        d = simple / project
        d.mkdir(parents=True)
        links = []
        for w in files:
            shutil.copy2(w, d / w.name)
            links.append(f'<a href="{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">{w.name}</a>')
        (d / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>\n")
    (simple / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(
        f'<a href="{p}/">{p}</a>' for p in sorted(projects)) + "</body></html>\n")
    return simple


@pytest.fixture
def mirror(tmp_path) -> dict:
    built = tmp_path / "built"
    built.mkdir()
    dep = _wheel(built, "tinydep", "1.2.0")
    app = _wheel(built, "mxnet", "2.0.0", requires=("tinydep>=1.1",))
    simple = _pep503(tmp_path / "mirror", [dep])
    return {"app": app, "url": simple.as_uri(), "simple": simple}


def test_local_index_dirs_are_the_paths_of_file_urls_and_plain_dirs(tmp_path):
    assert local_index_dirs(["https://pypi.org/simple", tmp_path], "file:///opt/mirror/simple") == [
        tmp_path.resolve(), Path("/opt/mirror/simple")]
    assert local_index_dirs([f"file://{tmp_path}/wheels"], None) == [tmp_path / "wheels"]
    assert local_index_dirs([], "https://mirror.example/simple") == []


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_the_venv_install_resolves_from_a_mirror_on_disk(mirror, tmp_path, monkeypatch, installer):
    """The wheel's own dependency comes from the mirror, with no --no-index or --find-links."""
    if installer == "uv":
        uv = shutil.which("uv") or (Path(__file__).resolve().parents[1] / ".venv" / "bin" / "uv")
        if not Path(uv).exists():
            pytest.skip("uv is not installed")
        monkeypatch.setenv("PATH", f"{Path(uv).parent}:{__import__('os').environ['PATH']}")
    else:
        which = shutil.which
        monkeypatch.setattr(venv_step.shutil, "which", lambda name, *a, **k: None if name == "uv" else which(name, *a, **k))
    venv = venv_step.create_venv(tmp_path / "venv", log=tmp_path / "venv.log")
    installed = venv_step.install(venv, mirror["app"], index_url=mirror["url"], log=tmp_path / "install.log")
    assert installed.get("tinydep") == "1.2.0", (installed, (tmp_path / "install.log").read_text()[-3000:])


def test_the_requirements_preflight_reads_a_mirror_on_disk(mirror, tmp_path):
    """Resolved from the mirror; a requirement the mirror cannot meet is the preflight's refusal
    (not "not checked": the mirror was read, and it lacks the version)."""
    ok = requirements_preflight.check(["tinydep>=1.1"], index_url=mirror["url"])
    assert not ok.refusal and not ok.not_checked and ok.resolved, ok
    bad = requirements_preflight.check(["tinydep>=9"], index_url=mirror["url"])
    assert "tinydep" in bad.refusal and not bad.not_checked, bad


# --- tools.index_mirror: the mirror an offline host is given ------------------------------------------

def test_the_mirror_holds_what_a_flavors_release_run_installs():
    """The flavor's own Requires-Dist, the gates' and the acceptance suite's test requirements."""
    from build_steps.acceptance.suite import load_suite
    from build_steps.profile_data import GATE_TEST_REQUIREMENTS, PROFILES
    from tools.index_mirror import requirements
    for flavor in ("cpu", "cuda"):
        reqs = requirements(flavor)
        assert set(PROFILES[flavor].hard_requirements) <= set(reqs)
        assert set(GATE_TEST_REQUIREMENTS) | set(load_suite().test_requirements) <= set(reqs)
        assert len(reqs) == len(set(reqs))
    assert not [r for r in requirements("cpu") if r.startswith("nvidia-")]


def test_a_mirror_built_from_wheels_serves_the_install(tmp_path):
    """tools.index_mirror's index (PEP 503, hrefs relative, sha256 fragments) is what the venv install
    resolves the wheel's dependency from; a name with another spelling is found under its
    normalized project page."""
    from tools.index_mirror import main
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "Tiny_Dep", "1.2.0")
    app = _wheel(tmp_path, "mxnet", "2.0.0", requires=("tiny-dep>=1.1",))
    assert main([str(tmp_path / "mirror"), "--wheels", str(wheels)]) == 0
    page = tmp_path / "mirror" / "simple" / "tiny-dep" / "index.html"
    assert page.is_file() and "#sha256=" in page.read_text()
    assert main([str(tmp_path / "mirror"), "--wheels", str(wheels)]) == 4, "a non-empty output dir is refused"
    venv = venv_step.create_venv(tmp_path / "venv", log=tmp_path / "venv.log")
    installed = venv_step.install(venv, app, index_url=(tmp_path / "mirror" / "simple").as_uri(),
                                  log=tmp_path / "install.log")
    from packaging.utils import canonicalize_name
    assert {canonicalize_name(k): v for k, v in installed.items()}.get("tiny-dep") == "1.2.0", installed
