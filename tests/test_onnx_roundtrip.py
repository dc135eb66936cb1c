"""ONNX gate: a small gluon HybridBlock (conv, batch norm, relu, max pooling, dense) exported with
mx.onnx.export_model passes onnx.checker and, run in onnxruntime, matches MXNet's own output.

Tolerances (float32, stated in probe_onnx.py): rtol 1e-4, atol 1e-5 elementwise.
"""
import pytest

from build_steps.venv import explain_probe

pytestmark = [pytest.mark.release, pytest.mark.runtime, pytest.mark.onnx]


@pytest.fixture(scope="module")
def onnx_result(venv_probe, tmp_path_factory):
    result = venv_probe("probe_onnx.py", tmp_path_factory.mktemp("onnx"), timeout=600)
    why = explain_probe(result)
    if why:
        pytest.fail(why, pytrace=False)
    return result


def test_onnx_export_passes_checker(onnx_result):
    err = onnx_result.get("error", "")
    exported = "ir_version" in onnx_result
    if not exported and "mapping" in err:
        pytest.fail(f"mx.onnx.export_model failed: {err}: this onnx removed onnx.mapping, which the "
                    "exporter imports; the wheel must pin onnx<1.18 or ship the _onnx_compat shim", pytrace=False)
    assert exported, (f"mx.onnx.export_model or onnx.checker.check_model failed: {err}\n"
                      f"{onnx_result.get('traceback', '')}")


def test_onnxruntime_matches_mxnet(onnx_result):
    assert "ir_version" in onnx_result, "the export failed (see test_onnx_export_passes_checker)"
    assert onnx_result.get("ok"), (
        f"{onnx_result.get('error')}: the exported model computes something else than MXNet "
        f"(onnx {onnx_result.get('onnx_version')}, onnxruntime {onnx_result.get('onnxruntime_version')}, "
        f"IR {onnx_result.get('ir_version')}, opset {onnx_result.get('opset')}); an operator "
        "translation in mxnet/onnx/mx2onnx is wrong or the weights were exported wrongly")
