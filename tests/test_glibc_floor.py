"""The wheel needs no newer glibc/libstdc++ symbol versions than the oldest host it promises.

A wheel built on a newer host than the release's reference (Ubuntu 24.04: glibc 2.39) imports there
and fails elsewhere with "version `GLIBC_2.40' not found". The floor is the profile's; --glibc-floor
replaces it (a build in an older container promises an older host); a manylinux_X_Y tag promises
glibc X.Y on its own.
"""
import pytest

pytestmark = [pytest.mark.release, pytest.mark.provenance, pytest.mark.elf]


def test_symbol_versions_within_floor(audit):
    ld = audit.loadability
    over = ld.floor_exceeded
    if over:
        worst = {}
        for o in over:
            worst.setdefault((o["member"], o["symbol"]), o)
        lines = [f"{o['member']} needs {o['symbol']} (from {o['library']}); the floor is {o['floor']}"
                 for o in worst.values()]
        floor = ", ".join(f"{f}_{v} ({ld.floor_source.get(f)})" for f, v in sorted(ld.floor.items()))
        pytest.fail(f"{audit.filename} needs newer symbol versions than the hosts it promises to load on "
                    f"({floor}):\n  " + "\n  ".join(lines[:20])
                    + "\nfix: build on (or in a container of) the reference host, or pass --glibc-floor "
                    "to promise a newer host", pytrace=False)
