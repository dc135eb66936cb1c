"""OpenCV gate: a PNG written by an independent encoder (stdlib zlib) round-trips through
mx.image.imdecode pixel-exactly; imresize and the gluon vision transforms work on it.

This gate never skips: skipping is what let the OpenCV-off wheel ship. One test per check, so a
package without gluon can be deselected with -k.
"""
import pytest

from build_steps.venv import explain_probe

pytestmark = [pytest.mark.release, pytest.mark.runtime, pytest.mark.opencv]

OPENCV_OFF = ("this wheel was built with OpenCV compiled out (MXNet raised \"Build with USE_OPENCV=1 ...\"): "
              "install libopencv-dev, delete the build dir, reconfigure with USE_OPENCV=ON and rebuild")


def _run(venv_probe, check):
    result = venv_probe("probe_opencv.py", check, timeout=300)
    why = explain_probe(result)
    assert why is None, why
    if result.get("opencv_off") or "USE_OPENCV" in str(result.get("error", "")):
        pytest.fail(f"{check}: {OPENCV_OFF}", pytrace=False)
    assert result.get("ok"), f"{check}: {result.get('error')}\n{result.get('traceback', '')}"
    return result


def test_png_rgb_roundtrip(venv_probe):
    r = _run(venv_probe, "rgb")
    assert r["mismatches"] == 0


def test_png_grayscale_roundtrip(venv_probe):
    r = _run(venv_probe, "gray")
    assert r["mismatches"] == 0


def test_imresize(venv_probe):
    r = _run(venv_probe, "imresize")
    assert r["shape"] == [12, 16, 3]


def test_gluon_vision_transforms(venv_probe):
    r = _run(venv_probe, "transforms")
    assert r["tensor_shape"] == [3, 12, 16]
