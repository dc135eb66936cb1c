"""A shard that passes: the installed sample mxnet imports from the venv and reports its features."""
import os
import sysconfig

import mxnet as mx


def test_mxnet_is_the_installed_wheel():
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    assert os.path.realpath(mx.__file__).startswith(site + os.sep), mx.__file__


def test_features_report_opencv():
    assert mx.runtime.Features().is_enabled("OPENCV")


def test_version_is_a_string():
    assert isinstance(mx.__version__, str) and mx.__version__
