"""A GPU shard: runs only where the installed mxnet reports a GPU."""
import mxnet as mx


def test_gpu_visible():
    assert mx.num_gpus() >= 1
