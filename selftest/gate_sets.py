"""The gates a selftest expects a child run to judge, derived instead of hand-kept: the ids come
from the flavor's committed release manifest (build_steps/release_sets/, regenerated with
``python -m harness.release_set --write``) and each gate's markers from collecting the gate
modules (harness.release_set.collect_gate_markers). Adding a gate is its module plus its
regression selftest; no count here changes by hand.
"""
from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

from build_steps.release_manifest import release_gates

HARNESS_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def gate_markers() -> dict:
    """nodeid -> marker names of every release gate, collected in a child interpreter (a nested
    pytest.main would install the harness's signal handlers in this one)."""
    code = ("import json; from harness.release_set import collect_gate_markers; "
            "print(json.dumps(collect_gate_markers()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=HARNESS_ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def gates_by_file(flavor: str, marker: str, *, without=()) -> dict:
    """gate module file name -> the names of ``flavor``'s release gates carrying ``marker`` and
    none of ``without``, in manifest order."""
    markers = gate_markers()
    out: dict = {}
    for nodeid in release_gates(flavor):
        marks = set(markers.get(nodeid, ()))
        if marker in marks and not marks & set(without):
            path, name = nodeid.split("::", 1)
            out.setdefault(Path(path).name, []).append(name)
    return {f: tuple(names) for f, names in out.items()}
