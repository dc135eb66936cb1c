"""The release set of each flavor, as data kept in the repo (``build_steps/release_sets/<flavor>.json``).

A release is published only when every gate id of its flavor's manifest passed in the run. The
set is fixed data, never "what this run collected": an option, an ini line, an environment
variable or a disabled plugin that changes collection (``--sw``, ``--lf``, ``--shards``,
``-o python_functions=...``) can only shrink what runs, and every id that did not run is then
listed by the refusal. The files are generated from the gate modules' markers
(``python -m harness.release_set --write``); ``--check`` (a selftest) fails when a gate module
and its manifest disagree.

Each manifest holds the flavor's gate ids (the publish gate excluded: it is the one that checks),
the ids of those that need a GPU (what a GPU runner must have passed before its arch counts as
verified, build_steps.gpu_reports) and the full acceptance shard list (id and lane) the shard gates
were generated from.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping, Protocol, Sequence

from .errors import FAIL, UsageError
from .pinning import sha256_of
from .publish import gates_not_passed
from .profile_data import PROFILES, Profile

MANIFEST_DIR = Path(__file__).resolve().parent / "release_sets"
#: every flavor of profiles.toml, each with its release set in release_sets/<flavor>.json
FLAVORS = tuple(PROFILES)
SCHEMA = 1
#: The markers a gate's flavor membership depends on (kept in the manifest beside each id).
GPU_MARKERS = ("gpu", "cublas")
FORMAT_MARKERS = {"elf": "elf", "macho": "macho"}


def left_out_by_flavor(markers: Iterable[str], profile: Profile) -> str | None:
    """Why a release gate with these marker names is no promise of ``profile`` (None: it is one).

    The one rule for the flavors' sets: harness.plugins.gates (GPU gates of a CPU wheel) and
    harness.plugins.macos (the other binary format's gates) deselect by it, and the manifests are made by it.
    """
    markers = set(markers)
    if not profile.is_cuda and markers & set(GPU_MARKERS):
        return f"a GPU gate: the {profile.name} profile makes no GPU promise"
    other = [m for fmt, m in FORMAT_MARKERS.items() if fmt != profile.binary_format and m in markers]
    if other:
        return f"reads {other[0]} binaries: the {profile.name} wheel's are {profile.binary_format}"
    return None


class ShardLike(Protocol):
    """What a manifest takes of an acceptance shard (build_steps.acceptance.suite's Shard)."""
    @property
    def id(self) -> str: ...

    @property
    def lane(self) -> str: ...


@dataclass(frozen=True)
class Manifest:
    flavor: str
    #: gate ids (pytest node ids relative to the harness root), sorted
    gates: tuple[str, ...]
    #: the acceptance shards the shard gates come from: ({"id", "lane"}, ...)
    shards: tuple[dict[str, str], ...]
    #: the gates among ``gates`` that run on a GPU (GPU_MARKERS), sorted
    gpu_gates: tuple[str, ...] = ()
    #: gate module (path relative to the harness root) -> sha256 of its bytes, the publish gate's
    #: included: a release run refuses modules that differ and ids collected from elsewhere
    #: (harness.plugins.plugin_guard), so an alias with the same node id cannot stand in
    modules: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "flavor": self.flavor,
                "generated_by": "python -m harness.release_set --write",
                "gates": list(self.gates), "gpu_gates": list(self.gpu_gates),
                "modules": dict(sorted(self.modules.items())),
                "shards": [dict(s) for s in self.shards]}


def manifest_path(flavor: str, root: Path | None = None) -> Path:
    base = (Path(root) / "build_steps" / "release_sets") if root is not None else MANIFEST_DIR
    return base / f"{flavor}.json"


def load_manifest(flavor: str, root: Path | None = None) -> Manifest:
    """The committed manifest of ``flavor``; a missing or malformed one is a UsageError."""
    if flavor not in FLAVORS:
        raise UsageError(f"no release manifest for flavor {flavor!r} (known: {', '.join(FLAVORS)})")
    path = manifest_path(flavor, root)
    try:
        data = json.loads(path.read_text())
        gates, shards = tuple(data["gates"]), tuple(data["shards"])
        gpu_gates = tuple(data["gpu_gates"])
        modules = dict(data.get("modules") or {})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"release manifest {path} cannot be read ({exc}); regenerate it with "
                         "python -m harness.release_set --write") from None
    return Manifest(flavor=flavor, gates=gates, shards=shards, gpu_gates=gpu_gates, modules=modules)


def release_gates(flavor: str) -> tuple[str, ...]:
    """The gate ids of ``flavor``'s release set (what a publish needs to have passed)."""
    return load_manifest(flavor).gates


def build_manifest(flavor: str, profile: Profile, gate_markers: Mapping[str, Collection[str]],
                   shards: Iterable[ShardLike], root: Path | None = None) -> Manifest:
    """The manifest of ``flavor`` from every collected release gate (nodeid -> marker names)
    and the full shard list (objects with ``id`` and ``lane``); ``root`` (the harness checkout)
    is where the gate modules are hashed."""
    gates = sorted(n for n, marks in gate_markers.items()
                   if "publish" not in marks and left_out_by_flavor(marks, profile) is None)
    gpu = [n for n in gates if set(gate_markers[n]) & set(GPU_MARKERS)]
    files = sorted({n.split("::")[0] for n, marks in gate_markers.items()
                    if n in gates or "publish" in marks})
    modules = {f: sha256_of(Path(root) / f) for f in files} if root is not None else {}
    return Manifest(flavor=flavor, gates=tuple(gates), gpu_gates=tuple(gpu), modules=modules,
                    shards=tuple({"id": s.id, "lane": s.lane} for s in shards))


def differences(committed: Manifest, generated: Manifest) -> list[str]:
    """What a gate module (or the shard data) has that the committed manifest has not, and back."""
    out: list[str] = []
    for gate in sorted(set(generated.gates) - set(committed.gates)):
        out.append(f"{committed.flavor}: gate {gate} is in the gate modules but not in the manifest")
    for gate in sorted(set(committed.gates) - set(generated.gates)):
        out.append(f"{committed.flavor}: gate {gate} is in the manifest but no gate module has it")
    if list(committed.gpu_gates) != list(generated.gpu_gates):
        changed = sorted(set(committed.gpu_gates) ^ set(generated.gpu_gates))
        out.append(f"{committed.flavor}: the GPU gates differ from the gate modules' markers "
                   f"({', '.join(changed) or 'order'})")
    if committed.modules != generated.modules:
        changed = sorted(k for k in committed.modules.keys() | generated.modules.keys()
                         if committed.modules.get(k) != generated.modules.get(k))
        out.append(f"{committed.flavor}: the gate modules' sha256 differ from the manifest's "
                   f"({', '.join(changed)})")
    if list(committed.shards) != list(generated.shards):
        have = {s["id"]: s.get("lane") for s in committed.shards}
        want = {s["id"]: s.get("lane") for s in generated.shards}
        changed = sorted(k for k in have.keys() | want.keys() if have.get(k) != want.get(k))
        out.append(f"{committed.flavor}: the shard list differs from the shard data "
                   f"({', '.join(changed) or 'order'})")
    return out


def write_or_check(generate: Callable[[], Mapping[str, Manifest]], argv: Sequence[str] | None = None) -> int:
    """``python -m harness.release_set --write|--check``: write the manifests ``generate`` makes from
    the gate modules (harness.release_set collects them), or name every disagreement (exit 1)."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m harness.release_set",
                                     description="generate or check the per-flavor release manifests")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write build_steps/release_sets/<flavor>.json")
    mode.add_argument("--check", action="store_true", help="exit 1 naming every disagreement")
    args = parser.parse_args(argv)
    generated = generate()
    if args.write:
        for flavor, manifest in generated.items():
            path = manifest_path(flavor)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(manifest.to_json(), indent=1) + "\n")
            print(f"{path}: {len(manifest.gates)} gates, {len(manifest.shards)} shards")
        return 0
    problems: list[str] = []
    for flavor, manifest in generated.items():
        try:
            problems += differences(load_manifest(flavor), manifest)
        except Exception as exc:  # UsageError: missing or unreadable file
            problems.append(str(exc))
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} disagreement(s) between the gate modules and build_steps/release_sets/: "
              "regenerate with python -m harness.release_set --write and review the diff")
        return FAIL
    print("release manifests agree with the gate modules: "
          + ", ".join(f"{f} {len(m.gates)} gates" for f, m in generated.items()))
    return 0


@dataclass
class ReleaseSet:
    flavor: str = ""
    #: the manifest's gate ids, then release gates this run collected from elsewhere
    gates: list[str] = field(default_factory=list)

    def including(self, nodeids: Iterable[str]) -> ReleaseSet:
        return ReleaseSet(flavor=self.flavor, gates=list(dict.fromkeys([*self.gates, *nodeids])))

    def size(self) -> int:
        return len(self.gates)

    def not_passed(self, verdicts: dict[str, str], excused: dict[str, str] | None = None) -> list[tuple[str, str]]:
        """``(id, verdict)`` of every gate of the set that did not pass in ``verdicts`` (``not run``
        when it has none). ``excused`` (id -> why) are shards the fork's own script would not run
        on this tree; they count as done."""
        excused = excused or {}
        return [(n, v) for n, v in gates_not_passed(self.gates, verdicts) if n not in excused]
