"""Steps and readers of the MXNet CUDA 13 release harness.

Every module here is plain Python taking paths and options and returning products; only
``conftest.py`` and ``tests/`` know about pytest.
"""
