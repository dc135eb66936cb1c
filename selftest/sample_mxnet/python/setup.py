"""setup.py of the sample MXNet tree: the fork's python/setup.py metadata contract, small.

MXNET_PACKAGE_VERSION (PEP 440, normalised) is the version; MXNET_SETUP_ENABLE_{CUDA,OPENCV,ONNX}_DEPS
switch the hard requirements with the fork's exact strings; the wheel is forced platform- and
interpreter-specific (cpXY-cpXY-linux_x86_64) because it carries libmxnet.so.
"""
import os
import sys

from setuptools import find_packages, setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def _env_flag(name):
    value = os.environ.get(name)
    if value is None:
        return None
    return value.strip().lower() not in ("0", "false", "off", "no")


def _version():
    raw = (os.environ.get("MXNET_PACKAGE_VERSION") or "").strip() or "2.0.0+cu13.bw.20260518.1"
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - setuptools always vendors packaging
        from setuptools._vendor.packaging.version import InvalidVersion, Version
    try:
        return str(Version(raw))
    except InvalidVersion:
        raise RuntimeError(f"MXNET_PACKAGE_VERSION must be a valid PEP 440 version, got '{raw}'")


VERSION = _version()
with open(os.path.join(HERE, "mxnet", "_build_info.py"), "w") as fh:
    fh.write("# written by setup.py\n__version__ = %r\n" % VERSION)

install_requires = [
    "numpy>=1.17,<2",
    "requests>=2.20.0,<3",
    "graphviz<0.9.0,>=0.8.1",
    "packaging>=20.0",
    'contextvars;python_version<"3.7"',
    "scipy-openblas32>=0.3.33,<0.4",
]
if _env_flag("MXNET_SETUP_ENABLE_CUDA_DEPS"):
    install_requires += ["nvidia-cudnn-cu13>=9.22,<10", "nvidia-nccl-cu13>=2.28,<3",
                         "nvidia-cublas>=13.5,<14"]
if _env_flag("MXNET_SETUP_ENABLE_OPENCV_DEPS"):
    install_requires += ["opencv-python>=4,<5"]
if _env_flag("MXNET_SETUP_ENABLE_ONNX_DEPS"):
    install_requires += ["onnx>=1.7.0,<1.22"]


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(
    name="mxnet",
    version=VERSION,
    description="Sample MXNet tree for the release harness's selftests",
    packages=find_packages(),
    package_data={"mxnet": ["libmxnet.so", "lib/*.so", "lib/*.so.*", "include/**/*.h",
                            "include/**/*"]},
    include_package_data=True,
    zip_safe=False,
    install_requires=install_requires,
    extras_require={"onnx": ["onnx>=1.7.0,<1.22"]},
    distclass=BinaryDistribution,
    python_requires=">=3.8",
)
