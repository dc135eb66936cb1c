"""Development switches leave the release: an override of the profile or a dirty tree builds, and
this gate fails, naming which promise each breaks, so the wheel is kept out of dist/ and the run
cannot publish."""
from __future__ import annotations

import pytest

from build_steps.overrides import broken_promises, development_option_promises

pytestmark = [pytest.mark.release, pytest.mark.build, pytest.mark.elf]


def test_no_development_override(mxnet_source, options, profile):
    reasons = development_option_promises(options) + broken_promises(options)
    if options.allow_dirty and mxnet_source.dirty_paths:
        reasons.append(f"--allow-dirty: built with {len(mxnet_source.dirty_paths)} uncommitted tracked "
                       "change(s): the wheel is not the build of any commit")
    if reasons:
        pytest.fail("development build, not publishable:\n  - " + "\n  - ".join(reasons), pytrace=False)
