"""A shard that fails: one test passes, two assert what a CPU build does not have."""
import mxnet as mx


def test_imports():
    assert mx.runtime.Features()


def test_cuda_compiled_in():
    assert mx.runtime.Features().is_enabled("CUDA"), "CUDA is not compiled in"


def test_sees_a_gpu():
    assert mx.num_gpus() > 0, "SAMPLE-WALL: no GPU"
