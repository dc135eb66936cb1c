"""Probe: export a small gluon HybridBlock (conv, batch norm, relu, pooling, dense) with
mx.onnx.export_model, check it with onnx.checker, run it in onnxruntime, compare with MXNet.

usage: probe_onnx.py WORKDIR
"""
import os
import sys

from probe_common import array, is_v2, run

SHAPE = (2, 3, 16, 16)
# float32 throughout; the two runtimes may sum the conv/dense terms in different orders, so the
# comparison allows float32 rounding noise and nothing more.
RTOL, ATOL = 1e-4, 1e-5


def build(mx):
    import numpy as np
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    x = array(mx, np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32))
    net(x)  # materialise deferred shapes
    rng = np.random.default_rng(4)
    # Non-trivial batch-norm statistics: with the defaults (mean 0, var 1, gamma 1, beta 0) a
    # dropped or mistranslated batch norm would still match.
    for name, p in net.collect_params().items():
        shape = p.shape
        if name.endswith(("running_var", "gamma")):
            p.set_data(array(mx, rng.uniform(0.5, 1.5, shape).astype(np.float32)))
        elif name.endswith(("running_mean", "beta")):
            p.set_data(array(mx, rng.uniform(-0.5, 0.5, shape).astype(np.float32)))
    net.hybridize()
    return net, x


def main(mx, result):
    import numpy as np
    workdir = sys.argv[1]
    os.makedirs(workdir, exist_ok=True)
    import onnx
    import onnxruntime as ort
    result["onnx_version"], result["onnxruntime_version"] = onnx.__version__, ort.__version__
    net, x = build(mx)
    want = net(x).asnumpy()
    prefix = os.path.join(workdir, "net")
    net.export(prefix, epoch=0)
    sym, params = prefix + "-symbol.json", prefix + "-0000.params"
    onnx_file = os.path.join(workdir, "net.onnx")
    if not hasattr(mx, "onnx"):
        import mxnet.onnx  # noqa: F401  (1.9 and 2.0 both ship mxnet.onnx; imported lazily in some builds)
    export = mx.onnx.export_model
    kwargs = dict(in_shapes=[SHAPE], in_types=[np.float32], onnx_file_path=onnx_file)
    path = export(sym, params, **kwargs)
    result["onnx_file"] = str(path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    result["ir_version"] = model.ir_version
    result["opset"] = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})[0]
    result["shape"] = list(got.shape)
    if got.shape != want.shape:
        result["error"] = f"onnxruntime output shape {got.shape} != MXNet's {want.shape}"
        return
    err = float(np.abs(got - want).max())
    result.update(max_abs_error=err, rtol=RTOL, atol=ATOL,
                  ok=bool(np.allclose(got, want, rtol=RTOL, atol=ATOL)))
    if not result["ok"]:
        result["error"] = (f"onnxruntime output differs from MXNet's: max |diff| {err:.3g} "
                           f"(rtol {RTOL}, atol {ATOL})")
    result["v2_api"] = is_v2(mx)


if __name__ == "__main__":
    run(main, "onnx")
