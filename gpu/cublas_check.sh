#!/usr/bin/env bash
# cuBLAS / driver check for a GPU box, no MXNet needed: run from the repository root.
#   PYTHONPATH=. gpu/cublas_check.sh [--sizes 16,256,1024,4096] [--lib /path/libcublas.so.13]
# 1. preflight (ctypes): driver R-number (/proc/driver/nvidia/version or nvidia-smi),
#    cuDriverGetVersion / cudaDriverGetVersion, the cuBLAS that would be loaded (pip nvidia/cu13/lib,
#    else ldconfig, else /usr/local/cuda), cublasGetProperty major.minor.patch, the version actually
#    mapped (/proc/self/maps), and the verdict on the two known traps.
# 2. raw cuBLAS cublasSgemm / cublasSsyrk / cublasDsyrk at each N vs numpy, each in a child process
#    (a segfault becomes {"crashed": true, "signal": "SIGSEGV"} plus a diagnosis).
# Prints one JSON document on stdout (also written to $OUT/cublas_check.json when $OUT is set),
# then a short human summary on stderr. No pip installs; needs python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
out=$(PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} "$PY" build_steps/cublas_probe.py all "$@")
echo "$out"
if [ -n "${OUT:-}" ]; then echo "$out" > "$OUT/cublas_check.json"; fi
echo "$out" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
p = d["preflight"]; drv = p["driver"]
print(f"driver {drv.get(\"kernel_module\")} (cuDriverGetVersion {drv.get(\"cuda_driver_version\")}, "
      f"cudaDriverGetVersion {drv.get(\"cudart_driver_version\")}), GPUs {[g[\"name\"] + \" sm_\" + g[\"compute_capability\"].replace(\".\", \"\") for g in drv.get(\"gpus\", [])]}", file=sys.stderr)
print(f"cuBLAS {p.get(\"full_version\") or p.get(\"version\")} from {p.get(\"loaded_from\") or p.get(\"lib\")}", file=sys.stderr)
v = p["verdict"]
print(f"verdict: {v[\"status\"]}", file=sys.stderr)
for t in v["traps"]: print("  TRAP " + t["message"], file=sys.stderr)
for r in v["risks"]: print("  risk " + r, file=sys.stderr)
if d.get("skipped"): print("checks skipped: " + d["skipped"], file=sys.stderr)
for c in d["checks"]:
    state = "ok  " if c.get("ok") else "FAIL"
    extra = c.get("diagnosis") or ""
    err = c.get("rel_error")
    print(f"  {state} {c[\"kind\"]:5} N={c[\"n\"]:5} status={c.get(\"status\", c.get(\"signal\", \"?\"))} "
          f"rel_err={err if err is None else format(err, \".2e\")} {extra}", file=sys.stderr)
'
