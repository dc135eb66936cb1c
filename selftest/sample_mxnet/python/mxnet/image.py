"""mxnet.image: imdecode / imresize backed by cv::imdecode / cv::resize in libmxnet."""
import ctypes

import numpy as np

from .base import _LIB, check_call


class NDArray:
    """Just enough of an NDArray: a host buffer with a shape."""

    def __init__(self, array):
        self._array = array

    @property
    def shape(self):
        return self._array.shape

    def asnumpy(self):
        return self._array.copy()


def _take(ptr, shape):
    n = int(np.prod(shape))
    out = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_uint8)), shape=(n,)).copy()
    _LIB.MXSampleFree(ptr)
    return out.reshape(shape)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    if isinstance(buf, np.ndarray):
        buf = buf.tobytes()
    data = bytes(buf)
    ptr = ctypes.c_void_p()
    h, w, c = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    check_call(_LIB.MXSampleImdecode(data, ctypes.c_size_t(len(data)), int(flag), int(to_rgb),
                                     ctypes.byref(ptr), ctypes.byref(h), ctypes.byref(w), ctypes.byref(c)))
    return NDArray(_take(ptr, (h.value, w.value, c.value)))


def imresize(src, w, h, interp=1):
    arr = np.ascontiguousarray(src.asnumpy() if isinstance(src, NDArray) else np.asarray(src), dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    ptr = ctypes.c_void_p()
    check_call(_LIB.MXSampleImresize(arr.ctypes.data_as(ctypes.c_void_p), arr.shape[0], arr.shape[1],
                                     arr.shape[2], int(w), int(h), int(interp), ctypes.byref(ptr)))
    return NDArray(_take(ptr, (int(h), int(w), arr.shape[2])))
