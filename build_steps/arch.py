"""The CUDA arch model: a parsed MXNET_CUDA_ARCH list (ArchSpec), the archs of one run (Arch), and
CUDA's rules of which SASS runs on which GPU.

A profile names its release arch list as text (profiles.toml ``cuda_arch``); everything that reads
arch text parses it here, once, into an ArchSpec.

``profile`` arguments are build_steps.profile_data.Profile objects (not imported here: profile_data
builds its profiles with this module).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

import jsonschema

from .errors import UsageError


@dataclass(frozen=True)
class ArchSpec:
    """A parsed MXNET_CUDA_ARCH list: SASS archs as ints (80, 120) and the PTX archs, and the list
    as it was written (what CMake is given and messages quote; not compared: "9.0" == "90")."""
    sass: tuple[int, ...]
    ptx: tuple[int, ...]
    text: str = field(default="", compare=False)

    @property
    def gencode_flags(self) -> list[str]:
        flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in self.sass]
        flags += [f"-gencode=arch=compute_{a},code=compute_{a}" for a in self.ptx]
        return flags


def parse_cuda_arch(value: str) -> ArchSpec:
    """Parse ``"8.0;8.6;9.0;12.0+PTX"`` (also accepts ``,`` or spaces as separators, and ``90``).

    ``X+PTX`` means SASS for X plus PTX for X, as MXNet's select_compute_arch.cmake reads it.
    """
    sass: list[int] = []
    ptx: list[int] = []
    items = [i for i in re.split(r"[;,\s]+", value.strip()) if i]
    if not items:
        raise UsageError("--cuda-arch is empty: give e.g. '8.0;8.6;8.9;9.0;10.0;12.0+PTX'")
    for item in items:
        m = re.fullmatch(r"(\d+)(?:\.(\d))?(\+PTX)?", item, flags=re.IGNORECASE)
        if not m:
            raise UsageError(
                f"--cuda-arch entry {item!r} is not an arch: use forms like '9.0', '12.0+PTX'")
        major, minor, with_ptx = m.group(1), m.group(2), m.group(3)
        arch = int(major) * 10 + int(minor) if minor is not None else int(major)
        if arch < 30 or arch > 200:
            raise UsageError(f"--cuda-arch entry {item!r} is not a CUDA compute capability")
        if arch not in sass:
            sass.append(arch)
        if with_ptx and arch not in ptx:
            ptx.append(arch)
    return ArchSpec(sass=tuple(sass), ptx=tuple(ptx), text=value)


#: No CUDA arch at all: a CPU profile's.
NO_ARCH = ArchSpec(sass=(), ptx=())


@dataclass(frozen=True)
class Arch:
    """The CUDA archs of one run, made once from ``--cuda-arch`` (or ``native``) and any
    ``--cmake-define=MXNET_CUDA_ARCH`` override (options.make_options), and carried to preflight,
    configure, the override judgement, the gates and the report. Nothing parses arch text after it.
    """
    #: what the run asks for: --cuda-arch (``native`` resolved on this host), else the profile's
    #: release list; NO_ARCH for a CPU profile. What the gates hold the wheel to.
    requested: ArchSpec = NO_ARCH
    #: the --cmake-define=MXNET_CUDA_ARCH override (a development build), None without one
    override: ArchSpec | None = None
    #: --cuda-arch=native: the GPUs it was resolved from ("NVIDIA H200 (9.0)"); empty otherwise
    native_gpus: tuple[str, ...] = ()

    @property
    def built(self) -> ArchSpec:
        """The list CMake builds: the override wins over the request."""
        return self.override if self.override is not None else self.requested

    @property
    def is_release_choice(self) -> bool:
        """Neither an override nor ``native`` chose the list (those are declared development builds)."""
        return self.override is None and not self.native_gpus

    # ---- the JSON form (the --provenance-json report's ``expected.cuda_arch``) ----------------
    # Readers of a report take the Arch back with from_json and use ``.built``: nothing parses the
    # text again. ``built`` is written too (derived, checked on reading) for readers outside Python.

    def to_json(self) -> dict[str, Any]:
        """``{"requested": SPEC, "override": SPEC | None, "native_gpus": [...], "built": SPEC}``,
        each SPEC ``{"sass": [80, ...], "ptx": [120], "text": "8.0;...;12.0+PTX"}``."""
        return {"requested": _spec_json(self.requested),
                "override": None if self.override is None else _spec_json(self.override),
                "native_gpus": list(self.native_gpus), "built": _spec_json(self.built)}

    @classmethod
    def from_json(cls, data: Any) -> "Arch":
        # ``data`` is any parsed JSON: the schema check below is what tells an arch from the rest
        """The Arch ``to_json`` wrote; a UsageError names what is not one (ARCH_JSON_SCHEMA)."""
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(ARCH_JSON_SCHEMA).iter_errors(data))
        if error is not None:
            at = "/".join(str(p) for p in error.absolute_path) or "the top level"
            raise UsageError(f"{str(data)[:120]} is not a CUDA arch as Arch.to_json writes it (at {at}: "
                             f"{error.message}); write the report again with this harness's --provenance-json")
        arch = cls(requested=_spec_of(data["requested"]),
                   override=None if data.get("override") is None else _spec_of(data["override"]),
                   native_gpus=tuple(data.get("native_gpus", ())))
        if "built" in data and _spec_of(data["built"]) != arch.built:
            raise UsageError(f"the arch's 'built' {data['built']} is not its override or request "
                             f"({arch.built.text!r}): the document was edited; write it again")
        return arch


def _object(values: dict[str, Any], *, required: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON-schema object of exactly these keys."""
    return {"type": "object", "properties": values, "required": list(required), "additionalProperties": False}


def _spec_json(spec: ArchSpec) -> dict[str, Any]:
    return {"sass": list(spec.sass), "ptx": list(spec.ptx), "text": spec.text}


def _spec_of(data: dict[str, Any]) -> ArchSpec:
    return ArchSpec(sass=tuple(data["sass"]), ptx=tuple(data["ptx"]), text=data.get("text", ""))


_ARCH_NUMBERS = {"type": "array", "items": {"type": "integer", "minimum": 30, "maximum": 200}}
_SPEC_JSON = _object({"sass": _ARCH_NUMBERS, "ptx": _ARCH_NUMBERS, "text": {"type": "string"}},
                    required=("sass", "ptx"))
#: The shape of Arch.to_json (JSON Schema): build_steps.gpu_reports.REPORT_SCHEMA checks reports with it.
ARCH_JSON_SCHEMA = _object({"requested": _SPEC_JSON, "override": {"anyOf": [{"type": "null"}, _SPEC_JSON]},
                           "native_gpus": {"type": "array", "items": {"type": "string"}}, "built": _SPEC_JSON},
                          required=("requested",))


class ArchProfile(Protocol):
    """What the functions here read of a build_steps.profile_data.Profile (named by shape: that
    module imports this one, so this one cannot import it, not even for type checking)."""
    @property
    def cuda_arch(self) -> str | None: ...
    @property
    def is_cuda(self) -> bool: ...
    @property
    def release_arch(self) -> ArchSpec: ...


def make_arch(profile: ArchProfile, requested: str | None, cmake_defines: Mapping[str, str],
              native: tuple[str, tuple[str, ...]] | None = None) -> Arch:
    """The run's Arch: ``requested`` (--cuda-arch text, or None for the profile's list) and the
    MXNET_CUDA_ARCH of ``cmake_defines``. ``native``: (text, GPUs) of --cuda-arch=native."""
    native_gpus: tuple[str, ...] = ()
    if native is not None:
        requested, native_gpus = native
    text = requested or profile.cuda_arch or ""
    # a CPU profile builds no CUDA code: its MXNET_CUDA_ARCH define reaches CMake and means nothing
    # (the define's text and its parse are two names so that each has one type)
    define = cmake_defines.get("MXNET_CUDA_ARCH") if profile.is_cuda else None
    override: ArchSpec | None = None
    if define is not None:
        try:
            override = parse_cuda_arch(define)
        except UsageError as exc:
            raise UsageError(f"--cmake-define=MXNET_CUDA_ARCH={define}: {exc}") from None
    return Arch(requested=parse_cuda_arch(text) if text else NO_ARCH, override=override,
                native_gpus=native_gpus)


def missing_release_archs(profile: ArchProfile, arch: ArchSpec) -> list[str]:
    """The profile's release archs (SASS, each with its GPU family, and PTX) that ``arch`` leaves
    out: the GPUs a build with ``arch`` would give no kernel image."""
    release = profile.release_arch
    missing = [f"sm_{a} ({ARCH_GPU_FAMILIES.get(a, 'unknown GPUs')})" for a in release.sass if a not in arch.sass]
    return missing + [f"compute_{a} PTX" for a in release.ptx if a not in arch.ptx]


#: SASS arch -> the GPUs that lose native code when the arch is missing from the fatbin.
ARCH_GPU_FAMILIES: dict[int, str] = {
    70: "Volta (V100)",
    75: "Turing (T4, RTX 20xx)",
    80: "Ampere A100/A30",
    86: "Ampere RTX 30xx/A10/A40/A6000",
    87: "Jetson Orin",
    89: "Ada Lovelace (L4, L40, RTX 40xx)",
    90: "Hopper (H100, H200, GH200)",
    100: "Blackwell datacenter (B200, GB200)",
    103: "Blackwell Ultra (B300, GB300)",
    110: "Jetson Thor",
    120: "Blackwell consumer/workstation (RTX 50xx, RTX PRO 6000)",
    121: "DGX Spark (GB10)",
}


class SassVariant(TypedDict):
    """One entry of SASS_VARIANTS."""
    runs_on: str
    keeps_generic_promise: bool


#: CUDA 13's binary compatibility of SASS by suffix, as data (CUDA C Programming Guide, "Binary
#: Compatibility" and "Feature Availability"): which compute capabilities a cubin for ``sm_XY``,
#: ``sm_XYf`` or ``sm_XYa`` runs on, and whether it keeps the generic ``sm_XY`` promise (code that
#: runs on every GPU of that line, later ones included). ``a`` code runs on exactly one compute
#: capability and on no later GPU; ``f`` code on the members of its family.
SASS_VARIANTS: dict[str, SassVariant] = {
    "": {"runs_on": "same major, this minor or later", "keeps_generic_promise": True},
    "f": {"runs_on": "its family (SASS_FAMILIES)", "keeps_generic_promise": True},
    "a": {"runs_on": "this compute capability only", "keeps_generic_promise": False},
}
#: Family-specific targets and the compute capabilities of their family (CUDA 13.0).
SASS_FAMILIES: dict[int, tuple[int, ...]] = {100: (100, 103), 103: (103,), 110: (110,), 120: (120, 121), 121: (121,)}


def sass_runs_on(arch: int, variant: str) -> frozenset[int]:
    """The known compute capabilities (ARCH_GPU_FAMILIES) a cubin for ``sm_<arch><variant>`` runs on."""
    if variant == "a":
        return frozenset({arch})
    if variant == "f":
        return frozenset(SASS_FAMILIES.get(arch, (arch,)))
    return frozenset(c for c in ARCH_GPU_FAMILIES if c // 10 == arch // 10 and c >= arch) | {arch}


def sass_keeps_promise(arch: int, variant: str, wanted: int) -> bool:
    """Does SASS ``sm_<arch><variant>`` keep the release promise of generic ``sm_<wanted>``?"""
    rule = SASS_VARIANTS.get(variant)
    return (rule is not None and rule["keeps_generic_promise"] and arch == wanted
            and sass_runs_on(arch, variant) >= sass_runs_on(wanted, ""))


def split_sass_name(name: str) -> tuple[int, str]:
    """``"sm_100a"`` -> ``(100, "a")``."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)([a-z]?)", name)
    if not m:
        raise ValueError(f"not a CUDA arch name: {name!r}")
    return int(m.group(1)), m.group(2)
