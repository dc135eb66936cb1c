"""The sample's GPU check: run the .cu kernel on gpu 0 and verify its result."""
from .base import _LIB, check_call


def run_kernel():
    """Raises MXNetError carrying the CUDA error name (e.g. cudaErrorNoKernelImageForDevice)."""
    check_call(_LIB.MXSampleRunKernel())
    return True
