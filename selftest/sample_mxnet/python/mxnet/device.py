"""mxnet.device: GPU count (cudaGetDeviceCount; 0 on CPU builds or without a driver)."""
import ctypes

from .base import _LIB, check_call


def num_gpus():
    n = ctypes.c_int()
    check_call(_LIB.MXGetGPUCount(ctypes.byref(n)))
    return n.value
