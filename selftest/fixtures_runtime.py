"""Selftest fixtures: runtime area.

The runtime gates are exercised against the real ``mxnet==1.9.1`` CPU wheel from PyPI (it needs
``numpy<1.24``; its ONNX exporter imports ``onnx.mapping``, hence ``onnx<1.17``). The wheel and its
dependencies are fetched once into a persistent wheelhouse (``$HARNESS_SELFTEST_CACHE`` or
~/.cache/mxnet-release-harness/selftest-runtime), under a file lock so xdist workers share it;
every child gate run then installs from that wheelhouse with ``--find-links``.

Regression artifacts are real wheels too: ``perturbed_onnx_wheel`` is the 1.9.1 wheel whose
``mxnet.onnx.export_model`` edits the exported model's first conv weight with the onnx API
(a wrong-weights exporter), with its RECORD rewritten so pip installs it like any wheel.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

MXNET_191 = "mxnet==1.9.1"
MXNET_191_WHEEL = "mxnet-1.9.1-py3-none-manylinux2014_x86_64.whl"
#: What mxnet 1.9.1 needs beside its own metadata (checked by the CEO: numpy 1.23.5, onnx 1.16.2).
MXNET_191_EXTRAS = ("numpy<1.24", "onnx<1.17")
WHEELHOUSE_REQUIREMENTS = (MXNET_191, *MXNET_191_EXTRAS, "onnxruntime>=1.20")


def selftest_cache() -> Path:
    root = os.environ.get("HARNESS_SELFTEST_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "mxnet-release-harness" / "selftest-runtime"
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_wheelhouse(dest: Path, requirements=WHEELHOUSE_REQUIREMENTS) -> Path:
    """``pip download`` the requirements (binary wheels for this interpreter) into ``dest`` once."""
    dest.mkdir(parents=True, exist_ok=True)
    stamp = dest / ".complete"
    want = json.dumps(sorted(requirements))
    with FileLock(str(dest) + ".lock"):
        if not (stamp.exists() and stamp.read_text() == want):
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
                 "-d", str(dest), *requirements], capture_output=True, text=True)
            if proc.returncode != 0:
                pytest.fail(f"could not fetch {MXNET_191} and its dependencies from the package index "
                            f"(network?):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}", pytrace=False)
            stamp.write_text(want)
    wheel = dest / MXNET_191_WHEEL
    assert wheel.is_file(), f"pip download did not produce {wheel}"
    return dest


@pytest.fixture(scope="session")
def mxnet191_wheelhouse() -> Path:
    """Directory with the real mxnet 1.9.1 wheel from PyPI and its dependencies."""
    return fetch_wheelhouse(selftest_cache() / f"wheelhouse-py{sys.version_info[0]}{sys.version_info[1]}")


@pytest.fixture(scope="session")
def mxnet191_wheel(mxnet191_wheelhouse) -> Path:
    return mxnet191_wheelhouse / MXNET_191_WHEEL


def runtime_args(wheel: Path, wheelhouse: Path, *extra) -> list:
    """The child-pytest arguments that install ``wheel`` the way mxnet 1.9.1 needs."""
    args = [f"--wheel={wheel}", f"--find-links={wheelhouse}"]
    args += [f"--extra-requirement={r}" for r in MXNET_191_EXTRAS]
    return args + list(extra)


# --- regression artifact: an exporter that writes a wrong weight ---------------------------
ONNX_PERTURBATION = '''

# --- selftest regression artifact: the exporter writes a wrong conv weight ---
def _harness_selftest_perturbed(export):
    def export_model(*args, **kwargs):
        path = export(*args, **kwargs)
        import onnx
        from onnx import numpy_helper
        model = onnx.load(path)
        for init in model.graph.initializer:
            if len(init.dims) == 4:  # the first convolution kernel
                w = numpy_helper.to_array(init)
                init.CopyFrom(numpy_helper.from_array((w * 1.05).astype(w.dtype), init.name))
                break
        onnx.save(model, path)
        return path
    return export_model


export_model = _harness_selftest_perturbed(export_model)
'''


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def rewrite_wheel(src: Path, dest: Path, edits: dict) -> Path:
    """Copy wheel ``src`` to ``dest`` with members replaced (name -> new bytes), RECORD updated."""
    tmp = dest.with_suffix(".tmp")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for line in zin.read(record_name).decode().splitlines():
            name = line.rsplit(",", 2)[0]
            if name in edits:
                line = f"{name},{_record_hash(edits[name])},{len(edits[name])}"
            lines.append(line)
        for info in zin.infolist():
            if info.filename == record_name:
                continue
            data = edits.get(info.filename)
            zout.writestr(info, data if data is not None else zin.read(info.filename))
        zout.writestr(record_name, "\n".join(lines) + "\n")
    tmp.replace(dest)
    return dest


@pytest.fixture(scope="session")
def perturbed_onnx_wheel(mxnet191_wheel) -> Path:
    """The 1.9.1 wheel with an exporter that scales the first conv weight by 1.05 after export."""
    digest = hashlib.sha256(ONNX_PERTURBATION.encode()).hexdigest()[:10]
    out_dir = selftest_cache() / f"perturbed-onnx-{digest}"
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / MXNET_191_WHEEL
    with FileLock(str(out_dir) + ".lock"):
        if not dest.exists():
            with zipfile.ZipFile(mxnet191_wheel) as z:
                init = z.read("mxnet/onnx/__init__.py")
            rewrite_wheel(mxnet191_wheel, dest, {"mxnet/onnx/__init__.py": init + ONNX_PERTURBATION.encode()})
    return dest
