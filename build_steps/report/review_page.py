"""The release review page: one self-contained HTML file per run that has a wheel.

A release engineer reviews a release by looking: the verdict, which gates passed, which archs the
wheel carries and on which GPU each was verified, what it bundles and how big each part is, where
the build's time went. This module turns the run's JSON report (``--provenance-json``'s document,
with its ``review`` section) plus the wheel file and, when given, the GPU runners' reports
(``build_steps.gpu_reports``) into that page: a jinja2 template with inline SVG charts, no script,
no network asset, readable printed.

    python -m tools.review_page REPORT.json [--wheel=W] [--gpu-reports=DIR] [--out=PAGE.html]

re-renders the page of a finished run, e.g. in CI's merge job once every GPU runner's report is in.
Functions take paths and plain data and return products; nothing here knows about pytest.
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import jinja2
from markupsafe import Markup, escape

from .. import gpu_reports
from ..atomic import write_atomic
from ..errors import NOT_JUDGED
from ..arch import ARCH_GPU_FAMILIES, Arch
from ..profile_data import PROFILES, Profile, only_cuda_profile

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE = "review_page.html.j2"
#: The JSON report's section the harness fills for this page (harness.plugins.review_clock).
SECTION = "review"
#: Bars in a chart before the rest is summed into one "others" bar (a page, not a dump).
MAX_BARS = 24

#: the run's JSON document and its parts, as json reads them (the page shows what it holds)
Json = dict[str, Any]


def _mib(n: float | None) -> str:
    n = float(n or 0)
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.0f} KiB"
    return f"{int(n)} B"


def _duration(s: float | None) -> str:
    s = float(s or 0)
    if s >= 3600:
        return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"
    if s >= 60:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{s:.1f} s"


def bars(rows: Iterable[Json], value_key: str, label_key: str = "name",
         fmt: Callable[[float], str] = _mib, limit: int = MAX_BARS) -> Json:
    """A horizontal bar chart's geometry: rows sorted by value, each with its width in percent of
    the largest; past ``limit`` the rest is one ``(N others)`` bar, so the chart stays readable."""
    rows = sorted((r for r in rows if (r.get(value_key) or 0) > 0), key=lambda r: -r[value_key])
    if len(rows) > limit:
        rest = rows[limit - 1:]
        rows = rows[:limit - 1] + [{label_key: f"({len(rest)} others)",
                                    value_key: sum(r[value_key] for r in rest)}]
    top = max((r[value_key] for r in rows), default=0) or 1
    return {"rows": [{"label": str(r[label_key]), "value": r[value_key], "text": fmt(r[value_key]),
                      "pct": round(100.0 * r[value_key] / top, 2)} for r in rows],
            "total": sum(r[value_key] for r in rows), "total_text": fmt(sum(r[value_key] for r in rows))}


# ---- the wheel's parts -------------------------------------------------------------------------

def _part_of(name: str) -> str:
    if name in ("mxnet/libmxnet.so", "mxnet/libmxnet.dylib"):
        return "libmxnet"
    if name.startswith("mxnet/lib/"):
        return "bundled libraries (mxnet/lib/)"
    if ".dist-info/" in name:
        return "metadata (.dist-info)"
    if name.startswith("mxnet/include/"):
        return "headers (mxnet/include/)"
    if name.endswith((".py", ".pyi")):
        return "Python code"
    return "other files"


def wheel_parts(wheel: Path) -> Json:
    """The wheel's size by part and each bundled library's size, from the zip's central directory
    (nothing is extracted). A file that is not a readable zip gives ``{"error": why}``."""
    wheel = Path(wheel)
    try:
        with zipfile.ZipFile(wheel) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
        file_size = wheel.stat().st_size
    except (OSError, zipfile.BadZipFile) as exc:
        return {"error": f"cannot read {wheel.name} as a zip: {exc}"}
    parts: dict[str, Json] = {}
    bundled: list[Json] = []
    for info in infos:
        part = parts.setdefault(_part_of(info.filename), {"name": _part_of(info.filename), "bytes": 0,
                                                           "compressed": 0, "files": 0})
        part["bytes"] += info.file_size
        part["compressed"] += info.compress_size
        part["files"] += 1
        if info.filename.startswith("mxnet/lib/"):
            bundled.append({"name": info.filename.rsplit("/", 1)[-1], "bytes": info.file_size,
                            "compressed": info.compress_size})
    return {"file_size": file_size, "unpacked": sum(i.file_size for i in infos),
            "parts": sorted(parts.values(), key=lambda p: -p["bytes"]),
            "bundled": sorted(bundled, key=lambda b: -b["bytes"])}


# ---- the arch matrix ---------------------------------------------------------------------------

@dataclass
class ArchRow:
    arch: str              # "sm_90"
    family: str            # "Hopper (H100/H200)"
    sass: bool | None      # SASS for it in libmxnet.so's fatbin (None: the fatbin was not read)
    ptx_wanted: bool
    ptx: bool | None
    verified: str          # "verified" / "failed" / "not judged" / "incomplete" / "not verified" / "no GPU reports"
    runs: list[str]             # "H100 on host-a (a.json): passed"


def arch_matrix(arch: Arch | None, fatbin: Json | None, merged: gpu_reports.Merged | None = None,
                profile: Profile | None = None) -> list[ArchRow]:
    """The archs built (``arch.built``: the report's, gpu_reports.report_arch; None: the release
    list of ``profile``, default the one CUDA profile) x (SASS present, PTX, verified on which GPU).
    ``fatbin`` is the audit's ``facts.fatbin``; ``merged`` a ``gpu_reports.Merged`` (None: no GPU
    runner's report given)."""
    spec = arch.built if arch is not None else (
        profile or only_cuda_profile("the review page's arch matrix")).release_arch
    sass = set((fatbin or {}).get("sass_archs") or ())
    ptx = set((fatbin or {}).get("ptx_archs") or ())
    rows: list[ArchRow] = []
    for a in spec.sass:
        name = f"sm_{a}"
        runs = (merged.per_arch.get(name, []) if merged is not None else [])
        state = "no GPU reports" if merged is None else merged.state(name)
        rows.append(ArchRow(
            arch=name, family=ARCH_GPU_FAMILIES.get(a, ""),
            sass=(a in sass) if fatbin else None, ptx_wanted=a in spec.ptx,
            ptx=(a in ptx) if fatbin else None, verified=state,
            runs=[f"{(r.gpu or {}).get('name') or '?'} on {r.host} ({r.report}): {r.outcome}" for r in runs]))
    return rows


def own_gpu_runs(doc: Json, sha256: str | None, arch: Arch | None) -> gpu_reports.Merged | None:
    """This run's own GPU gates as a merge of one report (None when no GPU gate ran here);
    ``arch``: the report's (gpu_reports.report_arch)."""
    if not ((doc.get(gpu_reports.SECTION) or {}).get("gates")) or not sha256:
        return None
    return gpu_reports.merge([(Path("this run"), doc)], sha256, arch)


def _arch_text(arch: Arch | None) -> str | None:
    """The list built as the page names it, with the request when the build used another list."""
    if arch is None or not arch.built.text:
        return None
    if arch.built == arch.requested:
        return arch.built.text
    return f"{arch.built.text} (requested {arch.requested.text or 'none'})"


# ---- the page ----------------------------------------------------------------------------------

#: report_sections' ``build.step_seconds`` keys -> the names the page gives the steps
_STEP_NAMES = {"cuda_root": "CUDA root", "configure": "configure", "compile": "compile",
               "stage": "stage+bundle", "built_wheel": "package"}


def _timeline_of_build(build: Json) -> Json:
    """The timeline from the JSON report's ``build`` section (harness.plugins.gate_gpus), for a
    report written without the review section."""
    measured = build.get("compile_time") or {}
    return {"steps": [{"name": _STEP_NAMES.get(k, k), "seconds": v} for k, v in (build.get("step_seconds") or {}).items()],
            **{k: measured.get(k) for k in ("slowest_steps", "cpu_seconds", "command_seconds", "commands")}}


def _timeline(review: Json, doc: Json | None = None) -> Json:
    """Each step's wall time; the compile step's slowest steps and CPU time, read by key and shown
    as "not measured" when the compile record has none (an older or interrupted build)."""
    tl = review.get("timeline") or _timeline_of_build((doc or {}).get("build") or {})
    steps = [{"name": s.get("name"), "seconds": float(s.get("seconds") or 0), "note": s.get("note", "")}
             for s in tl.get("steps") or () if isinstance(s, dict)]
    slowest = [{"name": s.get("target") or s.get("name") or "?", "seconds": float(s.get("seconds") or 0)}
               for s in tl.get("slowest_steps") or () if isinstance(s, dict)]
    cpu = tl.get("cpu_seconds")
    command = tl.get("command_seconds")
    compile_wall = next((s["seconds"] for s in steps if s["name"] == "compile"), 0)
    wall = sum(s["seconds"] for s in steps)
    run = tl.get("run") or {}
    phases = [{"name": p.get("name"), "seconds": float(p.get("seconds") or 0)} for p in run.get("phases") or ()
              if isinstance(p, dict)]
    return {"run": bars(phases, "seconds", fmt=_duration, limit=12) if phases else None,
            "run_total": _duration(run["total"]) if isinstance(run.get("total"), (int, float)) else None,
            "run_note": run.get("note", ""),
            "steps": bars(steps, "seconds", fmt=_duration) if steps else None,
            "notes": [s for s in steps if s["note"]], "wall": _duration(wall) if steps else None,
            "slowest": bars(slowest, "seconds", fmt=_duration, limit=10) if slowest else None,
            "commands": tl.get("commands"),
            "command": _duration(command) if isinstance(command, (int, float)) else None,
            "cpu": _duration(cpu) if isinstance(cpu, (int, float)) else None,
            "parallelism": (f"{cpu / compile_wall:.1f}x" if isinstance(cpu, (int, float)) and compile_wall
                            else None)}


#: The marker a not-run gate is grouped under: the first of these it carries (what deselects it).
GROUP_MARKERS = ("gpu", "cublas", "acceptance", "onnx", "runtime", "opencv", "publish", "build", "provenance")


def group_of(nodeid: str, markers: Iterable[str] | None) -> str:
    """The group a gate is listed under on the page: its telling marker, else its module."""
    marks = set(markers or ())
    return next((m for m in GROUP_MARKERS if m in marks), nodeid.split("::", 1)[0])


def verdict(gates: list[Json], release_set: Sequence[str] | None, flavor: str, interrupted: bool = False,
            selection: str | None = None) -> Json:
    """The page's verdict over ``gates`` (``{"nodeid", "verdict"}``, "not run" included).

    FAIL when a gate that ran did not pass; PARTIAL when all that ran passed but part of the
    flavor's ``release_set`` did not run (a selection is no release verdict); PASS only when every
    gate of the set ran and passed. Without a release set (an unknown flavor) a run is PARTIAL."""
    ran = [g for g in gates if g.get("verdict") not in (None, "not run")]
    passed = sum(g["verdict"] == "passed" for g in ran)
    skipped = sum(g["verdict"] in ("skipped", "xfailed") for g in ran)
    not_judged = sum(g["verdict"] == NOT_JUDGED for g in ran)
    failed = len(ran) - passed - skipped - not_judged
    out = {"passed": passed, "skipped": skipped, "ran": len(ran), "failed": failed, "flavor": flavor,
           "not_judged": not_judged}
    if selection:
        out["selection"] = selection
    set_ids = list(release_set or ())
    ran_ids = {g["nodeid"] for g in ran}
    out["set_size"] = len(set_ids)
    out["set_ran"] = sum(n in ran_ids for n in set_ids)
    whole = bool(set_ids) and out["set_ran"] == len(set_ids)
    if interrupted:
        out["outcome"] = "INTERRUPTED"
    elif not_judged and not failed:
        # the host kept gates from judging (build_steps.errors.NotJudged): no verdict on the wheel
        out["outcome"] = "ERROR"
        out["headline"] = f"ERROR: not judged ({not_judged} gate(s) could not judge the wheel)"
        out["meaning"] = ("the host failed, not the wheel (the reasons are beside the gates below): this is no "
                          "verdict; fix the host and re-run")
    elif failed or (skipped and whole) or not passed:
        out["outcome"] = "FAIL"
    elif not whole:
        out["outcome"] = "PARTIAL"
    else:
        out["outcome"] = "PASS"
    if whole:
        out["scope"] = f"the whole {flavor} release set ran ({len(set_ids)} gates)"
    elif set_ids:
        out["scope"] = f"{out['set_ran']} of the {flavor} release set's {len(set_ids)} gates ran"
        if out["outcome"] == "PARTIAL":  # a FAIL stays FAIL, with the scope beside it
            out["headline"] = f"PARTIAL: {out['set_ran']} of {len(set_ids)} gates of the release set ran"
        did_not_run = (f"{len(set_ids) - out['set_ran']} gates of the release set did not run (listed below by "
                       "marker): this is the verdict of this selection, not a release verdict; only a run "
                       "of the whole set can say PASS or publish")
        out["meaning"] = f"{out['meaning']}; {did_not_run}" if out.get("meaning") else did_not_run
    return out


def _verdict(review: Json, doc: Json) -> Json:
    v = dict(review.get("verdict") or {})
    if not v:  # a report written without the review section: its static gates only
        gates = doc.get("gates") or {}
        passed = sum(g.get("verdict") == "passed" for g in gates.values())
        v = {"outcome": "PASS" if gates and passed == len(gates) else "FAIL",
             "passed": passed, "ran": len(gates), "scope": "the static (provenance) gates of this report"}
    v.setdefault("outcome", "FAIL")
    if v["outcome"] == "PASS" and v.get("set_size") is None and v.get("scope", "").find("whole") < 0:
        # A report written before the review section knew its release set: never a green PASS.
        v["outcome"] = "PARTIAL"
        v.setdefault("headline", f"PARTIAL: {v.get('scope') or 'a selection of the gates'}")
    return v


def _not_run(review: Json) -> list[tuple[str, list[Json]]]:
    """``[(group, [gate, ...]), ...]``: the release set's gates that did not run, by marker."""
    groups: dict[str, list[Json]] = {}
    for g in review.get("not_run") or ():
        groups.setdefault(g.get("group") or "other", []).append(g)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _closure(facts: Json) -> Json | None:
    """What the console's provenance report says of the closure: libmxnet's NEEDED, each NEEDED
    entry's resolution by kind, what is left to the host and the symbol-version floor."""
    closure = facts.get("closure") or {}
    load = facts.get("loadability") or {}
    lib = facts.get("libmxnet") or {}
    if not closure and not load and not lib:
        return None
    kinds: dict[str, int] = {}
    for r in closure.get("resolutions") or ():
        kinds[r.get("verdict") or "?"] = kinds.get(r.get("verdict") or "?", 0) + 1
    unresolved = sum(n for k, n in kinds.items() if k in ("unresolved", "missing"))
    return {"needed": lib.get("needed") or [], "runpath": lib.get("search_path") or lib.get("runpath") or [],
            "resolved": sum(kinds.values()) - unresolved, "unresolved": unresolved,
            "kinds": sorted(kinds.items()), "host": sorted((load.get("host_needed") or {}).items()),
            "floor": sorted((load.get("floor") or {}).items()),
            "symbol_max": sorted((f, v.get("version"), v.get("library")) for f, v in (load.get("symbol_max") or {}).items()),
            "required_cuda": sorted(n for n in ((facts.get("requirements") or {}).get("hard") or {})
                                    if n.startswith("nvidia-"))}


def _gates(review: Json, doc: Json) -> list[Json]:
    rows = review.get("gates")
    if rows is None:
        rows = [{"nodeid": n, "verdict": g.get("verdict"), "why": g.get("message", ""), "markers": []}
                for n, g in sorted((doc.get("gates") or {}).items())]
    order = {"failed": 0, "error": 0, NOT_JUDGED: 0, "skipped": 1, "not run": 2, "xfailed": 3, "passed": 4}
    return sorted(rows, key=lambda r: (order.get(r.get("verdict"), 1), r.get("nodeid", "")))


def _closure_budget(profile: Profile | None, parts: Json | None) -> list[Json]:
    """The profile's closure budget per OpenCV choice (profiles.toml closure_budget, the gate
    test_bundled_closure_within_budget's), each with whether this wheel's mxnet/lib is within it."""
    if profile is None or not parts or parts.get("error"):
        return []
    files, mb = len(parts["bundled"]), sum(b["bytes"] for b in parts["bundled"]) / 1e6
    return [{"choice": choice, "files": f, "mb": m, "within": files <= f and mb <= m}
            for choice, (f, m) in sorted(profile.closure_budget.items())]


def page_view(doc: Json, parts: Json | None = None, merged: gpu_reports.Merged | None = None) -> Json:
    """Everything the template shows, from the run's JSON document ``doc``, the wheel's
    ``wheel_parts`` and the merged GPU reports."""
    review = doc.get(SECTION) or {}
    facts = doc.get("facts") or {}
    wheel = doc.get("wheel") or {}
    arch = gpu_reports.report_arch(doc)
    fatbin = facts.get("fatbin")
    profile_name: str | None = doc.get("profile")
    profile = PROFILES.get(profile_name) if profile_name is not None else None
    is_cuda = profile.is_cuda if profile is not None else True  # an unknown profile: shown as CUDA
    closure = None
    if parts and not parts.get("error"):
        closure = bars(parts["bundled"], "bytes")
    return {
        "title": wheel.get("filename") or facts.get("filename") or "no wheel",
        "created": doc.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile": doc.get("profile"),
        "verdict": _verdict(review, doc),
        "gates": _gates(review, doc),
        "is_cuda": is_cuda,
        "cuda_arch": _arch_text(arch),
        "archs": arch_matrix(arch, fatbin, merged, profile) if is_cuda else [],
        "fatbin_read": bool(fatbin),
        "gpu_reports": merged is not None,
        "gpu_ignored": list(merged.ignored) if merged is not None else [],
        "parts": parts or {"error": "the wheel file was not available to this page"},
        "part_bars": bars(parts["parts"], "bytes") if parts and not parts.get("error") else None,
        "closure": closure,
        "closure_budget": _closure_budget(profile, parts),
        "timeline": _timeline(review, doc),
        "overrides": review.get("overrides") or {},
        # the build's nvcc, c++, cmake, ninja and CUDA wheels, and whether it is reproducible
        "toolchain": {**((doc or {}).get("build") or {}).get("toolchain", {}),
                      **({"reproducible": ((doc or {}).get("build") or {})["reproducible"].removeprefix("reproducible compile: ")}
                         if ((doc or {}).get("build") or {}).get("reproducible") else {})},
        "warnings": list(dict.fromkeys([*(review.get("warnings") or ()), *(facts.get("warnings") or ())])),
        "sha256": wheel.get("sha256"),
        # where the wheel lies now (dist/ or set aside), else where it was named or built
        "wheel_file": review.get("wheel_location") or wheel.get("file") or wheel.get("filename"),
        "wheel_size": _mib(wheel.get("size")) if wheel.get("size") else None,
        "hard": (facts.get("requirements") or {}).get("hard") or {},
        "not_run": _not_run(review),
        "selection": (review.get("verdict") or {}).get("selection"),
        "closure_facts": _closure(facts),
        # an audit builds nothing: the commit is the one --mxnet-src's checkout showed (facts.git)
        "provenance": ({"commit": (facts.get("git") or {}).get("commit")} if facts.get("git") else {})
                      | (review.get("provenance") or {}),
        "configure_notes": list(review.get("configure_notes") or ()),
        "sample": bool((review.get("provenance") or {}).get("sample")),
        "written": list(review.get("written") or ()),
        "rendered_from": review.get("rendered_from"),
    }


def _breakable(text: object) -> Markup:
    """A gate id or path that may wrap at its separators (``/``, ``::``, ``_``, ``[``), never
    inside a word, so a narrow window breaks ``tests/test_x.py::test_long_name`` readably."""
    out = str(escape(str(text or "")))
    return Markup(re.sub(r"(::|/|_|\[|\.(?=[a-z]))", r"\1<wbr>", out))


def render(view: Json) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                             autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["breakable"] = _breakable
    return env.get_template(TEMPLATE).render(**view)


def write_page(dest: Path, doc: Json, wheel: Path | None = None, merged: gpu_reports.Merged | None = None) -> Path:
    """Render the page of ``doc`` and write it to ``dest`` all or nothing (build_steps.atomic)."""
    parts = wheel_parts(wheel) if wheel is not None and Path(wheel).is_file() else None
    html = render(page_view(doc, parts, merged)).encode()
    return write_atomic(Path(dest), lambda fh: fh.write(html), needed=len(html))
