"""Runtime Features gate: mxnet.runtime.Features() in the installed wheel agrees with the release
profile, and mxnet.__version__ is the wheel's version.

The regression it exists for: a wheel that imports fine but was built with a feature compiled out
(the OpenCV-off wheel that broke 27 d2l notebooks) or silently without cuDNN/NCCL.
"""
import pytest

from build_steps.profile_data import CMAKE_FEATURES, FEATURE_ALIASES
from build_steps.venv import expected_version, explain_probe

pytestmark = [pytest.mark.release, pytest.mark.runtime]

FIX = {
    "CUDA": "configure with USE_CUDA=ON and the CUDA 13 toolkit on PATH",
    "CUDNN": "install cuDNN 9 for CUDA 13 (libcudnn.so must be findable), delete the build dir, reconfigure",
    "NCCL": "install NCCL for CUDA 13 (libnccl-dev), delete the build dir, reconfigure",
    "ONEDNN": "configure with USE_ONEDNN=ON and an initialised 3rdparty/onednn submodule",
    "OPENCV": "install libopencv-dev, delete the build dir, reconfigure with USE_OPENCV=ON",
    "OPENMP": "configure with USE_OPENMP=ON",
}


@pytest.fixture(scope="module")
def features(venv_probe):
    result = venv_probe("probe_features.py", timeout=300)
    why = explain_probe(result)
    if why:
        pytest.fail(why, pytrace=False)
    if not result.get("ok"):
        pytest.fail(f"Features() could not be read: {result.get('error')}", pytrace=False)
    return result


def _runtime_value(features: dict, name: str):
    for alias in FEATURE_ALIASES.get(name, (name,)):
        if alias in features:
            return alias, features[alias]
    return None, None


@pytest.mark.parametrize("cmake_key", sorted(CMAKE_FEATURES))
def test_feature_matches_profile(features, profile, cmake_key):
    name = CMAKE_FEATURES[cmake_key]
    want = profile.features[cmake_key]
    spelled, got = _runtime_value(features["features"], name)
    assert spelled is not None, (
        f"Features() has no {name} entry (nor {', '.join(FEATURE_ALIASES.get(name, ()))}): "
        f"this MXNet ({features.get('mxnet_version')}) does not report it")
    note = f" (reported as {spelled}, the MXNet 1.x name)" if spelled != name else ""
    assert got == want, (
        f"Features() says {name}{note} is {'ON' if got else 'OFF'} but the {profile.name} profile "
        f"requires {'ON' if want else 'OFF'}: the wheel was built with the wrong {cmake_key}; "
        + (FIX.get(name, "fix the configure flags") if want else
           f"a {profile.name} wheel must not carry {name}: configure with {cmake_key}=OFF"))


def test_version_matches_wheel(features, options, wheel_path):
    from packaging.version import InvalidVersion, Version

    want = expected_version(wheel_path, options.package_version)
    got = features.get("mxnet_version")
    try:
        same = Version(str(got)) == Version(want)
    except InvalidVersion:
        same = False
    assert same, (
        f"mxnet.__version__ is {got} but the wheel is {want}: the package version stamp "
        "(python/mxnet/libinfo.py __version__) was not set from MXNET_PACKAGE_VERSION at build time")
