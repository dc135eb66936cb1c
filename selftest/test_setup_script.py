"""scripts/setup.sh picks apt package names by distribution: Debian's chromium + chromium-driver on
Debian; on Ubuntu, where those names are snap wrappers, the browser is left out of the main set."""
from __future__ import annotations

import subprocess

from selftest.conftest import HARNESS_ROOT


def packages(tmp_path, os_release: str) -> list:
    f = tmp_path / "os-release"
    f.write_text(os_release)
    r = subprocess.run(["bash", str(HARNESS_ROOT / "scripts" / "setup.sh"), "--print-packages"],
                       env={"PATH": "/usr/bin:/bin", "OS_RELEASE": str(f)}, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("\n")[-2].split()


def test_debian_gets_debians_chromium(tmp_path):
    pkgs = packages(tmp_path, 'ID=debian\nVERSION_ID="12"\n')
    assert "chromium" in pkgs and "chromium-driver" in pkgs and "libopencv-dev" in pkgs


def test_ubuntu_leaves_the_browser_out(tmp_path):
    pkgs = packages(tmp_path, 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n')
    assert "libopencv-dev" in pkgs and not any(p.startswith("chromium") for p in pkgs), pkgs


def test_the_harness_install_leaves_byte_compiling_to_first_import():
    """pip byte-compiles every dependency up front by default: half of setup.sh's install time, paid by
    every fresh CI job (the workflow play runs setup.sh five times). The install line keeps
    --no-compile."""
    lines = [l for l in (HARNESS_ROOT / "scripts" / "setup.sh").read_text().splitlines()
             if "pip install" in l and '-e ".[selftest]"' in l and not l.lstrip().startswith("#")]
    assert len(lines) == 1 and "--no-compile" in lines[0].split(), lines


def test_the_readmes_entry_scripts_are_executable_in_git():
    """The README's first command runs `scripts/setup.sh` directly and CI runs `.ci/run`: a merge that
    drops the mode (it happened, 2026-12-06) breaks a fresh clone's first line."""
    out = subprocess.run(["git", "-C", str(HARNESS_ROOT), "ls-files", "-s", "scripts/setup.sh", ".ci/run"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    modes = {line.split("\t")[1]: line.split()[0] for line in out if line}
    assert modes == {"scripts/setup.sh": "100755", ".ci/run": "100755"}, modes
