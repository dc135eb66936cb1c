"""METADATA: the dependencies the profile promises, with exactly the pins it promises."""
import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_onnx_dependency_policy(audit, profile):
    reqs = audit.requirements
    if profile.onnx_hard:
        problems = []
        if not audit.onnx_files:
            problems.append(f"{audit.filename} does not ship the mxnet/onnx package (mx.onnx.export_model "
                            "is gone); do not set MXNET_SETUP_EXCLUDE_ONNX")
        if "onnx" not in reqs.hard:
            where = " (only as the [onnx] extra)" if "onnx" in reqs.extras else ""
            problems.append(f"{audit.filename} METADATA does not declare onnx as a hard runtime dependency"
                            f"{where}: the {profile.name} wheel promises mx.onnx works after `pip install`; "
                            "build with MXNET_SETUP_ENABLE_ONNX_DEPS=1")
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)
    elif "onnx" not in reqs.extras:
        pytest.fail(f"{audit.filename} METADATA has no [onnx] extra: `pip install mxnet[onnx]` no longer "
                    "installs onnx; keep extras_require={'onnx': [...]} in setup.py", pytrace=False)


def test_hard_requirements_pinned(audit, profile):
    problems = []
    for text in profile.hard_requirements:
        want = Requirement(text)
        name = canonicalize_name(want.name)
        if name == "onnx" or name in audit.requirements.conflicted:
            continue  # the ONNX gate owns onnx (hard vs extra); the conflict gate two lines for one name
        have = audit.requirements.hard.get(name)
        if have is None:
            problems.append(f"{want.name} is not a hard Requires-Dist (want {text})")
        elif SpecifierSet(have) != want.specifier:
            problems.append(f"{want.name}{have} is pinned differently from {text}")
    if problems:
        pytest.fail(f"{audit.filename} METADATA does not carry the {profile.name} profile's pins:\n  "
                    + "\n  ".join(problems) + "\nfix: build with the profile's MXNET_SETUP_ENABLE_* switches "
                    "and the fork's setup.py (cuBLAS >=13.5 fixes the syrk crash of 13.1.1.3)", pytrace=False)


def test_forbidden_hard_absent(audit, profile):
    bad = [f"{name}: {why}" for name, why in profile.forbidden_hard.items()
           if canonicalize_name(name) in audit.requirements.hard]
    if audit.requirements.invalid:
        bad += [f"invalid Requires-Dist {x}" for x in audit.requirements.invalid]
    if bad:
        pytest.fail(f"{audit.filename} METADATA declares hard dependencies the {profile.name} wheel must "
                    "not have:\n  " + "\n  ".join(bad), pytrace=False)


def test_requires_dist_unambiguous(audit):
    # pip reads every Requires-Dist line and must satisfy all that apply: two lines for one
    # distribution are at best redundant and at worst unsatisfiable (ResolutionImpossible), while a
    # reader that keeps the last line per name sees a clean pin.
    conflicts = audit.requirements.conflicts
    if conflicts:
        pytest.fail(f"{audit.filename} METADATA names {len(conflicts)} distribution(s) on more than one "
                    "Requires-Dist line:\n  " + "\n  ".join(conflicts[:20])
                    + "\nfix: declare each dependency once in setup.py's install_requires (one specifier set)",
                    pytrace=False)
