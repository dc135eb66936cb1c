"""Steps and readers of the MXNet CUDA 13 release harness.

Every module here is plain Python taking paths and options and returning products; only
``conftest.py``, ``harness/`` (the pytest plugins) and ``tests/`` know about pytest.
"""
