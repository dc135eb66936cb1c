"""Probe: MXNet's cuBLAS paths on gpu(0) vs numpy: linalg.syrk and a square GEMM (dot).

usage: probe_mx_blas.py syrk|gemm N
The gate runs each call in its own child (this probe), so a segfault inside cuBLAS is a result.
It reports the cuBLAS actually mapped into the process (path from /proc/self/maps).
"""
import os
import sys

from probe_common import array, is_v2, mapped_files, run


def syrk(mx, a):
    # linalg.syrk(A) = A A^T. 2.0 keeps the legacy mx.nd.linalg namespace beside mx.np; try the
    # numpy-extension spelling first so a 2.0 build without the legacy frontend still works.
    if is_v2(mx):
        fn = getattr(getattr(mx.npx, "linalg", None), "syrk", None) or getattr(mx.npx, "linalg_syrk", None)
        if fn is not None:
            return fn(a)
        return mx.nd.linalg.syrk(a.as_nd_ndarray()).as_np_ndarray()
    return mx.nd.linalg.syrk(a)


def main(mx, result):
    import numpy as np
    kind, n = sys.argv[1], int(sys.argv[2])
    result.update(kind=kind, n=n)
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    dev = mx.gpu(0)
    x = array(mx, a, dev)
    if kind == "syrk":
        got = syrk(mx, x).asnumpy()
        ref = a.astype(np.float64) @ a.astype(np.float64).T
    elif kind == "gemm":
        y = array(mx, b, dev)
        got = (mx.np.dot(x, y) if is_v2(mx) else mx.nd.dot(x, y)).asnumpy()
        ref = a.astype(np.float64) @ b.astype(np.float64)
    else:
        raise SystemExit(f"unknown kind {kind}")
    libs = [p for p in mapped_files() if os.path.basename(p).startswith("libcublas")]
    result["cublas_loaded"] = libs
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
    # Relative Frobenius error vs a float64 reference. MXNet may run float32 GEMM in TF32 on
    # Ampere+ (10-bit mantissa, ~1e-3 relative); 1e-2 allows that and still catches garbage.
    tol = 1e-2
    result.update(rel_error=err, tolerance=tol, ok=err <= tol)
    if not result["ok"]:
        result["error"] = f"{kind} N={n} relative error {err:.3g} > {tol}"


if __name__ == "__main__":
    run(main, "mx_blas")
