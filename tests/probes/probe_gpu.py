"""Probe: GPU smoke on gpu(0): device count, an elementwise op and a small convolution vs CPU.

usage: probe_gpu.py count|elementwise|conv
A "no kernel image" CUDA error is flagged (no_kernel_image) with the GPU's compute capability, so
the gate can name the arch the wheel lacks.
"""
import sys

from probe_common import array, gpu_compute_capability, is_v2, num_gpus, run

NO_KERNEL_MARKS = ("no kernel image", "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU")


def conv(mx, x, w, b):
    if is_v2(mx):
        return mx.npx.convolution(x, w, b, kernel=(3, 3), num_filter=4, pad=(1, 1))
    return mx.nd.Convolution(data=x, weight=w, bias=b, kernel=(3, 3), num_filter=4, pad=(1, 1))


def main(mx, result):
    import numpy as np
    check = sys.argv[1]
    result["check"] = check
    result["num_gpus"] = n = num_gpus(mx)
    cc = gpu_compute_capability(0)
    result["compute_capability"] = f"{cc[0]}.{cc[1]}" if cc else None
    if n < 1:
        result["no_gpu"] = True
        result["error"] = "MXNet sees no GPU (num_gpus() == 0)"
        return
    if check == "count":
        result["ok"] = True
        return
    rng = np.random.default_rng(7)
    try:
        if check == "elementwise":
            a = rng.standard_normal((64, 33)).astype(np.float32)
            b = rng.standard_normal((64, 33)).astype(np.float32)
            outs = []
            for dev in (mx.cpu(), mx.gpu(0)):
                x, y = array(mx, a, dev), array(mx, b, dev)
                outs.append((x * y + x).asnumpy())
            tol = 1e-6
        elif check == "conv":
            x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
            w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
            b = rng.standard_normal((4,)).astype(np.float32)
            outs = [conv(mx, array(mx, x, d), array(mx, w, d), array(mx, b, d)).asnumpy()
                    for d in (mx.cpu(), mx.gpu(0))]
            tol = 1e-3  # cuDNN may pick a TF32/Winograd algorithm: 27-term sums, ~1e-4 expected
        else:
            raise SystemExit(f"unknown check {check}")
    except Exception as exc:
        if any(m in str(exc) for m in NO_KERNEL_MARKS):
            result["no_kernel_image"] = True
        raise
    err = float(np.abs(outs[0] - outs[1]).max())
    result.update(max_abs_error=err, tolerance=tol, ok=err <= tol)
    if not result["ok"]:
        result["error"] = f"gpu(0) result differs from CPU by {err} (> {tol})"


if __name__ == "__main__":
    run(main, "gpu")
