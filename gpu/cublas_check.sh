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
# The probe knows no CUDA stack of its own: the flavor's (build_steps/profiles.toml, FLAVOR=cuda by
# default) is handed to it as arguments, as the harness's cuda_preflight fixture does. A GPU host
# whose python lacks the harness's dependencies gets them in CUBLAS_STACK_ARGS, printed on a machine
# that has them by: python -m tools.cuda_stack_args cuda
FLAVOR=${FLAVOR:-cuda}
if [ -n "${CUBLAS_STACK_ARGS:-}" ]; then
    stack=$CUBLAS_STACK_ARGS
elif ! stack=$(PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} "$PY" -m tools.cuda_stack_args "$FLAVOR"); then
    echo "cublas_check: cannot read the $FLAVOR flavor's CUDA stack from build_steps/profiles.toml" \
         "(its python needs jsonschema and packaging). Install them, or set CUBLAS_STACK_ARGS to what" \
         "python -m tools.cuda_stack_args $FLAVOR prints on a machine with the harness" >&2
    exit 2
fi
eval "set -- $stack \"\$@\""
out=$(PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} "$PY" tests/probes/cublas_probe.py all --summary "$@")
echo "$out"
if [ -n "${OUT:-}" ]; then echo "$out" > "$OUT/cublas_check.json"; fi
