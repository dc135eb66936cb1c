"""Where libmxnet.so is and which version this package is."""
import os

try:
    from ._build_info import __version__
except ImportError:
    __version__ = "2.0.0+cu13.bw.20260518.1"


def find_lib_path():
    path = os.environ.get("MXNET_LIBRARY_PATH")
    if path and os.path.isfile(path):
        return [path]
    here = os.path.dirname(os.path.abspath(__file__))
    candidate = os.path.join(here, "libmxnet.so")
    if os.path.isfile(candidate):
        return [candidate]
    raise RuntimeError(f"Cannot find libmxnet.so; candidates: [{candidate}]")
