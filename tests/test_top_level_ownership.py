"""The wheel's top-level names in site-packages (from the install map) are its own: not a declared
dependency's (installing would overwrite that distribution's files, uninstalling either would
remove the other's) and not a well-known shadowing name (``site``, ``typing``, ``tests``...; the
list and the dependencies' names are data in build_steps/profiles.toml, [install])."""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_top_level_names_are_own(audit):
    bad = audit.install.ownership_problems
    if bad:
        pytest.fail(f"{audit.filename} installs {len(bad)} top-level name(s) it does not own "
                    f"(its names: {', '.join(audit.install.top_level)}):\n  " + "\n  ".join(bad[:20]),
                    pytrace=False)
