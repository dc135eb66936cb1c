"""No code runs at interpreter start-up: a ``.pth`` file (site.py executes its ``import`` lines at
every start of every Python program in the environment) or a ``sitecustomize``/``usercustomize``
module, in any install scheme. The install map says where each lands; a profile may allow a listed
one with a reason (``startup_allowed`` in build_steps/profiles.toml)."""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_no_startup_code(audit):
    bad = [s for s in audit.install.startup if not s["allowed"]]
    if bad:
        lines = [f"{s['member']} (installs as {s['installed']}), first line: {s['first_line']!r}" for s in bad]
        pytest.fail(f"{audit.filename} installs {len(bad)} file(s) that run code at every interpreter start, "
                    "with no import of the package:\n  " + "\n  ".join(lines[:20])
                    + "\nfix: remove them from the wheel (do the work at `import mxnet`), or list one under "
                    "the profile's startup_allowed with a reason", pytrace=False)
