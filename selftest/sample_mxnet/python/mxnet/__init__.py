"""Sample MXNet package: the slice of mxnet's Python API the release gates use."""
from .libinfo import __version__
from . import base, device, image, runtime
from .base import MXNetError
from .device import num_gpus

__all__ = ["__version__", "MXNetError", "num_gpus", "base", "device", "image", "runtime"]
