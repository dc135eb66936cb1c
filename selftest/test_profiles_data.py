"""build_steps/profiles.toml is schema-checked when loaded: an unknown key, a misspelt one or a
reference to an undefined reason is an error naming the key and the file, never a profile that
silently lacks a promise."""
from __future__ import annotations

import pytest

from build_steps.profile_data import PROFILES, PROFILES_FILE, CMAKE_FEATURES, ProfileDataError, load_profiles


def _variant(tmp_path, old: str, new: str):
    text = PROFILES_FILE.read_text()
    assert old in text
    path = tmp_path / "profiles.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_shipped_file_loads():
    assert load_profiles().profiles == PROFILES


@pytest.mark.parametrize("old,new,key", [
    ("[reasons]\n", "colour = \"blue\"\n\n[reasons]\n", "colour"),
    ("[profiles.cpu]\n", "[profiles.cpu]\nonnx_hardness = true\n", "onnx_hardness"),
    ("libcudnn = { runpath", "libcudnn = { ruNpath = \"x\", runpath", "ruNpath"),
])
def test_unknown_key_is_refused(tmp_path, old, new, key):
    path = _variant(tmp_path, old, new)
    with pytest.raises(ProfileDataError) as err:
        load_profiles(path)
    assert key in str(err.value) and str(path) in str(err.value)


def test_toggle_must_be_a_boolean(tmp_path):
    path = _variant(tmp_path, "[profiles.cpu.cmake]\nCMAKE_BUILD_TYPE = \"Release\"\nUSE_CUDA = false",
                    "[profiles.cpu.cmake]\nCMAKE_BUILD_TYPE = \"Release\"\nUSE_CUDA = \"OFF\"")
    with pytest.raises(ProfileDataError, match=r"profiles\.cpu\.cmake\.USE_CUDA"):
        load_profiles(path)


def test_undefined_reason_is_refused(tmp_path):
    path = _variant(tmp_path, 'forbidden_names = { onnx = "onnx-extra" }',
                    'forbidden_names = { onnx = "onnx-extras" }')
    with pytest.raises(ProfileDataError, match=r"\[profiles\.cpu\] forbidden_names names 'onnx-extras'") as err:
        load_profiles(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_each_toggle_is_stated_once(name):
    """The configure flag of a feature toggle is derived from the feature, never stated beside it."""
    profile = PROFILES[name]
    for key in CMAKE_FEATURES:
        assert profile.configure_flags[key] == ("ON" if profile.features[key] else "OFF")


def test_startup_allowance_needs_a_defined_reason(tmp_path):
    # A start-up file a profile allows (issue 32) names its reason by key, like every other exception.
    path = _variant(tmp_path, "[profiles.cpu]\n", "[profiles.cpu]\nstartup_allowed = { \"mxnet-hook.pth\" = \"no-such-reason\" }\n")
    with pytest.raises(ProfileDataError, match=r"\[profiles\.cpu\] startup_allowed names 'no-such-reason'"):
        load_profiles(path)
    path = _variant(tmp_path, "[profiles.cpu]\n", "[profiles.cpu]\nstartup_allowed = { \"mxnet-hook.pth\" = \"onnx-extra\" }\n")
    assert load_profiles(path).profiles["cpu"].startup_allowed == {
        "mxnet-hook.pth": "the CPU wheel keeps onnx as the optional [onnx] extra"}


def test_install_table_is_closed(tmp_path):
    path = _variant(tmp_path, "[install]\n", "[install]\nshadowing_name = [\"tests\"]\n")
    with pytest.raises(ProfileDataError, match="shadowing_name'"):
        load_profiles(path)
