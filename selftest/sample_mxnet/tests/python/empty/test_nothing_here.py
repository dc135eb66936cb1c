"""A shard that collects nothing: helpers only, no test functions."""


def helper():
    return 1
