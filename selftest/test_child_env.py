"""Issue 19, item 3: the wheel's code never sees a secret.

A real wheel whose ``mxnet/__init__.py`` dumps ``os.environ`` is installed into a real venv and
imported the ways the harness imports it (a probe; the acceptance suite's import check, run as
the shards run); the dumps hold the allow-list and the ``--pass-env`` names, never a token.
"""
from __future__ import annotations

import base64
import os
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from build_steps import venv as venv_step
from build_steps.acceptance.venv import verify_installed_mxnet
from build_steps.errors import UsageError
from build_steps.venv import SECRET_PATTERNS, check_pass_env, clean_env
from selftest.conftest import HARNESS_ROOT, run_gates

SECRETS = {"GH_TOKEN": "ghp_selftest", "GITHUB_TOKEN": "ghs_selftest", "AWS_SECRET_ACCESS_KEY": "aws-selftest",
           "AWS_ACCESS_KEY_ID": "AKIASELFTEST", "TWINE_PASSWORD": "pypi-selftest", "CI_JOB_TOKEN": "ci-selftest",
           "MY_API_SECRET": "s3cr3t", "DOCKER_CREDENTIALS": "creds"}
#: What the harness's environment may hold that the wheel's code has no business with.
UNRELATED = {"UNRELATED_SETTING": "x", "LD_LIBRARY_PATH": "/nowhere", "PIP_INDEX_URL_SELFTEST": "https://u:p@x"}
PASSED = {"MXNET_CUDNN_AUTOTUNE_DEFAULT": "0"}

ENV_DUMPER = '''
import json, os
with open(os.path.join(os.getcwd(), "environ-%d.json" % os.getpid()), "w") as fh:
    json.dump(dict(os.environ), fh)
__version__ = "2.0.0"
'''
PROBE = "import mxnet\nprint('{\"ok\": true}')\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def env_dump_wheel(dest_dir: Path) -> Path:
    """mxnet-2.0.0 whose ``import mxnet`` writes os.environ to environ-<pid>.json in the cwd."""
    info = "mxnet-2.0.0.dist-info"
    files = {"mxnet/__init__.py": ENV_DUMPER.encode(),
             f"{info}/METADATA": b"Metadata-Version: 2.1\nName: mxnet\nVersion: 2.0.0\n",
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: selftest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "\n".join(_record_line(n, d) for n, d in files.items()) + f"\n{info}/RECORD,,\n"
    path = dest_dir / "mxnet-2.0.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return path


def _dumps(directory) -> list:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("environ-*.json"))]


def test_wheel_code_sees_no_secret(tmp_path, monkeypatch):
    for key, value in {**SECRETS, **UNRELATED, **PASSED}.items():
        monkeypatch.setenv(key, value)
    wheel = env_dump_wheel(tmp_path)
    venv = venv_step.create_venv(tmp_path / "venv", log=tmp_path / "venv.log", pass_env=tuple(PASSED))
    venv_step.install(venv, wheel, no_deps=True, log=tmp_path / "install.log")

    probe_dir, tree = tmp_path / "probe", tmp_path / "tree"
    (probe_dir).mkdir()
    (tree / "tests" / "python").mkdir(parents=True)
    script = tmp_path / "probe_import.py"
    script.write_text(PROBE)
    result = venv_step.run_probe(venv, script, cwd=probe_dir)
    assert result.get("ok"), result
    facts = verify_installed_mxnet(venv, tree)  # the shards' import, in the shards' environment
    assert not facts["problems"], facts

    dumps = _dumps(probe_dir) + _dumps(tree)
    assert len(dumps) == 2, "the wheel's __init__ did not run in both children"
    for environ in dumps:
        leaked = sorted(set(SECRETS) & set(environ))
        assert not leaked, f"secrets reached the wheel's code: {leaked}"
        assert not any(v in json.dumps(environ) for v in SECRETS.values())
        assert not set(UNRELATED) & set(environ), sorted(set(UNRELATED) & set(environ))
        assert environ["MXNET_CUDNN_AUTOTUNE_DEFAULT"] == "0"  # --pass-env
        assert environ["PATH"] and environ["HOME"]


def test_pip_gets_its_proxies_and_no_configuration_or_secret(monkeypatch):
    # issue 42, item 2: the invoker's pip/uv configuration stays out of every install (the
    # installs themselves: test_runtime_units), the proxies and the caches' places reach it
    for key, value in {**SECRETS, "PIP_FIND_LINKS": "/opt/wheels", "UV_INDEX_URL": "http://127.0.0.1:9/",
                       "HTTPS_PROXY": "http://proxy:3128", "UV_CACHE_DIR": "/var/uv",
                       "LC_ALL": "C.UTF-8"}.items():
        monkeypatch.setenv(key, value)
    pip_env, code_env = clean_env(pip=True), clean_env()
    assert "PIP_FIND_LINKS" not in pip_env and "UV_INDEX_URL" not in pip_env and "PIP_FIND_LINKS" not in code_env
    assert pip_env["PIP_CONFIG_FILE"] == os.devnull and pip_env["UV_NO_CONFIG"] == "1"
    assert pip_env["HTTPS_PROXY"] == "http://proxy:3128" and pip_env["UV_CACHE_DIR"] == "/var/uv"
    assert "HTTPS_PROXY" not in code_env and "UV_CACHE_DIR" not in code_env
    assert code_env["LC_ALL"] == "C.UTF-8"
    assert not set(SECRETS) & (set(pip_env) | set(code_env))
    # Not even through extra= (e.g. a shard's own variables).
    assert "GH_TOKEN" not in clean_env({"GH_TOKEN": "x"}, pass_env=("GH_TOKEN",))


@pytest.mark.parametrize("name", ["GH_TOKEN", "GITHUB_SHA", "AWS_REGION", "NPM_TOKEN", "DB_PASSWORD",
                                  "CLIENT_SECRET", "gh_token"])
def test_pass_env_refuses_secret_names(name):
    with pytest.raises(UsageError, match=f"--pass-env {name}: the name matches a secret pattern"):
        check_pass_env([name])


def test_pass_env_refuses_loader_variables_and_bad_names():
    with pytest.raises(UsageError, match="loader/import variable"):
        check_pass_env(["LD_LIBRARY_PATH"])
    with pytest.raises(UsageError, match="give one variable name"):
        check_pass_env(["A=B"])
    assert check_pass_env(["MXNET_ENGINE_TYPE", "MXNET_ENGINE_TYPE"]) == ("MXNET_ENGINE_TYPE",)
    assert len(SECRET_PATTERNS) >= 6


def test_pass_env_of_a_secret_is_one_usage_error(pytester):
    result = run_gates(pytester, HARNESS_ROOT / "tests", "--co", "--pass-env", "GH_TOKEN", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [ln for ln in result.stderr.lines if ln.startswith("ERROR")] == [
        "ERROR: --pass-env GH_TOKEN: the name matches a secret pattern (*TOKEN*): it is credential-shaped, "
        "and the wheel's code never gets credentials"]


SETUP_DUMPER = '''
import json, os
from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "environ-setup.json"), "w") as fh:  # python/: the step's own output
    json.dump(dict(os.environ), fh)
setup(name="mxnet", version=os.environ["MXNET_PACKAGE_VERSION"], packages=["mxnet"])
'''


def test_package_build_runs_the_trees_setup_py_without_secrets(tmp_path, monkeypatch):
    # The package step runs the tree's python/setup.py (python -m build): the wheel's own code too.
    import sys
    from build_steps import package
    from build_steps.profile_data import PROFILES
    for key, value in {**SECRETS, **UNRELATED}.items():
        monkeypatch.setenv(key, value)
    tree = tmp_path / "tree"
    (tree / "python" / "mxnet").mkdir(parents=True)
    (tree / "python" / "mxnet" / "__init__.py").write_text("")
    (tree / "python" / "setup.py").write_text(SETUP_DUMPER)
    result = package.build_wheel(tree, "2.0.0", PROFILES["cpu"], tmp_path / "staging", tmp_path / "logs",
                                 sys.executable)
    assert result.wheel.is_file()
    environ = json.loads((tree / "python" / "environ-setup.json").read_text())
    assert not set(SECRETS) & set(environ), sorted(set(SECRETS) & set(environ))
    assert environ["MXNET_PACKAGE_VERSION"] == "2.0.0" and "UNRELATED_SETTING" not in environ
