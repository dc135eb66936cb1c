"""Every setting that changes what is built or checked is the profile's or a development option
(issue 29, items 5 and 6).

The settings are data (build_steps/development_settings.toml, schema-checked). Each one used makes
the run's override gate fail naming it, lists it in the summary, and blocks the publish; CMAKE_NM is
the one host workaround a release run may use, recorded as such. ``--pass-env`` takes only names on
the allow-list and refuses anything credential-shaped by name (exit 4).
"""
from __future__ import annotations

import re

import pytest

from build_steps import development_settings as ds
from build_steps.errors import UsageError
from build_steps.options import make_options
from build_steps.overrides import broken_promises, development_option_promises
from selftest.conftest import HARNESS_ROOT, run_gates
from selftest.fixtures_build import copy_sample_tree
from selftest.fixtures_publish import make_release_repo

SHARDS = str(HARNESS_ROOT / "build_steps" / "acceptance" / "shards.toml")


def _raw(**kw) -> dict:
    return {"flavor": "cpu", "cuda_arch": None, "cmake_defines": None, **kw}


def _reasons(options) -> list[str]:
    return development_option_promises(options) + broken_promises(options)


#: raw option values -> the words the gate and the summary must name (one per development setting)
SETTINGS = [
    pytest.param({"glibc_floor": "GLIBC_9.99"}, "--glibc-floor=GLIBC_9.99", id="glibc-floor"),
    pytest.param({"no_deps": True}, "--no-deps", id="no-deps"),
    pytest.param({"extra_requirements": ["numpy<2"]}, "--extra-requirement=numpy<2", id="extra-requirement"),
    pytest.param({"no_index": True}, "--no-index", id="no-index"),
    pytest.param({"pass_env": ["MXNET_ENGINE_TYPE"]}, "--pass-env=MXNET_ENGINE_TYPE", id="pass-env"),
    pytest.param({"shards_file": SHARDS}, f"--shards-file={SHARDS}", id="shards-file"),
    pytest.param({"no_sandbox": True}, "--no-sandbox", id="no-sandbox"),
    pytest.param({"allow_untracked": True}, "--allow-untracked", id="allow-untracked"),
    pytest.param({"shard_split": ["gpu_operator:1/2"]}, "--shard-split=gpu_operator:1/2", id="shard-split"),
    pytest.param({"flavor": "cuda", "fast_compile": True, "fast_compile_device": "max"}, "--fast-compile-device=max",
                 id="fast-compile-device"),
    pytest.param({"cmake_defines": ["CMAKE_CXX_FLAGS_RELEASE=-O0"]}, "CMAKE_CXX_FLAGS_RELEASE=-O0", id="cxx-flags"),
    pytest.param({"cmake_defines": ["CMAKE_C_FLAGS=-g"]}, "CMAKE_C_FLAGS=-g", id="c-flags"),
    pytest.param({"cmake_defines": ["CMAKE_SHARED_LINKER_FLAGS=-Wl,-z,lazy"]},
                 "CMAKE_SHARED_LINKER_FLAGS=-Wl,-z,lazy", id="linker-flags"),
    pytest.param({"cmake_defines": ["CMAKE_BUILD_TYPE=Debug"]}, "CMAKE_BUILD_TYPE=Debug", id="build-type"),
    pytest.param({"cmake_defines": ["CMAKE_CXX_COMPILER=clang++"]}, "CMAKE_CXX_COMPILER=clang++", id="compiler"),
    pytest.param({"cmake_defines": ["MXNET_CUDA_ARCH="]}, "MXNET_CUDA_ARCH=", id="arch-on-cpu"),
    pytest.param({"flavor": "cuda", "cmake_defines": ["MXNET_CUDA_ARCH=8.0;8.6;8.9;9.0;10.0;12.0+PTX;12.0"]},
                 "MXNET_CUDA_ARCH=8.0;8.6;8.9;9.0;10.0;12.0+PTX;12.0", id="arch-on-cuda-not-the-profiles"),
    pytest.param({"cmake_defines": ["SOME_FORK_SWITCH=1"]}, "SOME_FORK_SWITCH=1", id="unknown-define"),
]


@pytest.mark.parametrize("raw,named", SETTINGS)
def test_each_development_setting_fails_the_gate_by_name(raw, named):
    options = make_options(_raw(**raw))
    reasons = _reasons(options)
    assert any(named in r for r in reasons), reasons
    assert any(named in o for o in options.development_options), options.development_options
    assert not _reasons(make_options(_raw(flavor=raw.get("flavor", "cpu")))), "the release run has none"


def test_every_option_of_the_data_file_has_a_case():
    # fast_compile: the shorthand --fast-compile-device refines (its own case is in test_development_build)
    covered = {k for p in SETTINGS for k in p.values[0] if k not in ("cmake_defines", "flavor", "fast_compile")}
    assert covered == set(ds.option_dests()), "a development option of the data file without a selftest case"


def test_profile_values_and_the_host_workaround_are_not_development():
    options = make_options(_raw(cmake_defines=["USE_OPENCV=ON", "CMAKE_NM=/bin/true"]))
    assert _reasons(options) == [] and options.development_options == ()
    assert options.host_workarounds and options.host_workarounds[0].startswith("-DCMAKE_NM=/bin/true (")
    cuda = make_options(_raw(flavor="cuda", cmake_defines=["MXNET_CUDA_ARCH=8.0;8.6;8.9;9.0;10.0;12.0+PTX"]))
    assert _reasons(cuda) == [], "the profile's own arch list is the profile's"


def test_data_file_is_schema_checked(tmp_path):
    text = ds.SETTINGS_FILE.read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[options.no_deps]\noption", "[options.no_deps]\noptoin"))
    with pytest.raises(ds.SettingsDataError, match=r"options\.no_deps.*'optoin'|options\.no_deps"):
        ds.load_settings(bad)
    bad.write_text(text + '\n[flags]\nx = "y"\n')
    with pytest.raises(ds.SettingsDataError, match="'flags' was unexpected"):
        ds.load_settings(bad)
    bad.write_text(text.replace("[pass_env]\n", '[pass_env]\nSIGNING_KEY = "signs"\n'))
    with pytest.raises(ds.SettingsDataError, match="SIGNING_KEY look"):
        ds.load_settings(bad)


@pytest.mark.slow
def test_development_settings_build_but_fail_the_gate_and_cannot_publish(pytester, tmp_path, gh_standin):
    repo = make_release_repo(tmp_path / "e2e", source=copy_sample_tree(tmp_path / "sample"))
    result = run_gates(pytester, HARNESS_ROOT / "tests",
                       "-m", "(release and (build or provenance)) or publish", "-k", "not install",
                       f"--mxnet-src={repo.repo}", "--flavor=cpu", "--jobs=2", "--no-deps", "--no-index",
                       "--glibc-floor=GLIBC_9.99", "--extra-requirement=numpy<2", "--pass-env=OMP_NUM_THREADS",
                       f"--shards-file={SHARDS}", "--cmake-define=CMAKE_SHARED_LINKER_FLAGS=-Wl,-O1",
                       "--cmake-define=CMAKE_NM=/bin/true", "--publish", "--dry-run", timeout=1500)
    out = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-6000:]
    assert "FAILED   tests/test_build_overrides.py::test_no_development_override" in out, out[-6000:]
    summary = next(line for line in out.splitlines() if line.startswith("development options: "))
    for named, in_gate in (("--no-deps",) * 2, ("--no-index",) * 2, ("--glibc-floor=GLIBC_9.99",) * 2,
                           ("--extra-requirement=numpy<2",) * 2, ("--pass-env=OMP_NUM_THREADS",) * 2,
                           (f"--shards-file={SHARDS}",) * 2,
                           ("--cmake-define=CMAKE_SHARED_LINKER_FLAGS=-Wl,-O1", "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-O1")):
        assert named in summary, summary
        assert re.search(re.escape(in_gate) + r" \(a development (option|setting)\): ", out), in_gate
    assert "CMAKE_NM" not in summary
    assert "host workaround (allowed): -DCMAKE_NM=/bin/true" in out
    assert "publish refused" in out and repo.local_tags() == [] and gh_standin.calls() == []
    assert not list((repo.repo / "dist").glob("*.whl")), "a development build must not reach dist/"


# --- --pass-env: an allow-list --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["PYPI_API_KEY", "SIGNING_KEY", "GPG_PASSPHRASE", "CI_JOB_JWT",
                                  "SSH_AUTH_SOCK", "NPM_AUTH", "BASH_ENV"])
def test_pass_env_refuses_what_the_issue_found_accepted(name):
    with pytest.raises(UsageError, match=f"--pass-env {name}: (the name matches a secret pattern|not on the allow-list)"):
        ds.check_pass_env([name])


@pytest.mark.parametrize("name", ["PYPI_API_KEY", "BASH_ENV"])
def test_pass_env_refusal_is_exit_4_naming_the_variable(pytester, name):
    result = run_gates(pytester, HARNESS_ROOT / "tests", "--co", f"--pass-env={name}", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR == 4
    errors = [ln for ln in result.stderr.lines if ln.startswith("ERROR")]
    assert len(errors) == 1 and f"--pass-env {name}:" in errors[0], errors


def test_pass_env_accepts_a_documented_name():
    assert ds.check_pass_env(["MXNET_CUDNN_AUTOTUNE_DEFAULT", "OMP_NUM_THREADS"]) == (
        "MXNET_CUDNN_AUTOTUNE_DEFAULT", "OMP_NUM_THREADS")
    doc = (HARNESS_ROOT / "docs" / "development_settings.md").read_text()
    undocumented = [n for n in ds.SETTINGS.pass_env if f"`{n}`" not in doc]
    assert not undocumented, f"allow-listed but not in docs/development_settings.md: {undocumented}"
