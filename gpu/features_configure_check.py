"""Configure only (never compile) the real fork as the features run will: the cuda profile's toggles
(OpenCV, oneDNN, LAPACK ON), ``--fast-compile``, one arch, OpenCV from a prefix (the fork's
OPENCV_ROOT), the CUDA root ``--cuda-from-wheels`` assembles. Extra arguments are --cmake-define
values (e.g. CMAKE_NM=/bin/true); FC in the environment names the gfortran the fork's BLAS probe runs.

  FC=<prefix>/usr/bin/gfortran .venv/bin/python gpu/features_configure_check.py SRC BUILD PREFIX [KEY=VALUE ...]

docs/gpu_runs/real_fork_features_plan.md, section 3, is what it printed.
"""
import json
import sys
import time
from pathlib import Path

from build_steps import configure, cuda_root
from build_steps.bundle import opencv_config_dir
from build_steps.options import make_options

src, build, prefix = map(Path, sys.argv[1:4])
opts = make_options({"flavor": "cuda", "cmake_defines": sys.argv[4:], "fast_compile": True,
                     "opencv_prefix": str(prefix), "cuda_arch": "9.0"})
root = cuda_root.assemble_cuda_root(python=sys.executable)
start = time.monotonic()
res = configure.configure(src, build, opts.profile, opts.cuda_arch, build / "logs",
                          extra_defs={**root.cmake_args, "OPENCV_ROOT": str(opencv_config_dir(prefix))},
                          env=root.env, overrides=opts.build_defines)
print(json.dumps({"seconds": round(time.monotonic() - start, 1), "first_time": res.first_time,
                  "notes": res.notes, "gencode": res.gencode}, indent=1))
print("development options:", opts.development_options, "host workarounds:", opts.host_workarounds)
