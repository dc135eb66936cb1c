"""The release profiles moved to modules named for their concerns: build_steps.profile_data (the
data file, its schema and the Profile objects), build_steps.arch (the CUDA arch model),
build_steps.versions (the version scheme), build_steps.library_policy (host and pip libraries),
build_steps.cuda_stack (a CUDA major's stack) and build_steps.fast_compile. Import from those.
"""
from __future__ import annotations

# ---- for harness/ until it is moved: the names harness/*.py imports from here ------------------
from .profile_data import GATE_TEST_REQUIREMENTS, PROFILES, get_profile  # noqa: F401
