"""Loading libmxnet.so and turning its errors into MXNetError."""
import ctypes

from .libinfo import find_lib_path


class MXNetError(RuntimeError):
    """Error raised by the C side (MXGetLastError)."""


def _load_lib():
    # RTLD_LOCAL, like MXNet: the library's own RUNPATH finds its bundled dependencies.
    return ctypes.CDLL(find_lib_path()[0], mode=ctypes.RTLD_LOCAL)


_LIB = _load_lib()
_LIB.MXGetLastError.restype = ctypes.c_char_p


def check_call(ret):
    if ret != 0:
        raise MXNetError(_LIB.MXGetLastError().decode("utf-8", "replace"))
