"""A shard that fails: one test passes, two assert what a CPU build does not have."""
import mxnet as mx


def test_imports():
    assert mx.runtime.Features()


def test_cuda_compiled_in():
    assert mx.runtime.Features().is_enabled("CUDA"), "SAMPLE-INNER-DETAIL: CUDA is not compiled in"


def test_sees_a_gpu():
    assert mx.num_gpus() > 0, "SAMPLE-INNER-DETAIL: no GPU"
