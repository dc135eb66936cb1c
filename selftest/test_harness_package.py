"""The harness installed without ``-e`` carries every file of its folders (issue 47 item 7).

The modules read data beside themselves (profiles.toml, release_sets/, acceptance/shards.toml,
the shard plugin in acceptance/shard_part/, report/templates/), and the folders are packages of
their own (harness/plugins/, build_steps/acceptance/, build_steps/report/). An editable install
maps the source folders and hides a file the packaging leaves out; the wheel does not. The wheel
is built from the checkout's tracked files with setuptools from this venv (no network)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from selftest.conftest import HARNESS_ROOT

SHIPPED = ("build_steps/", "harness/", "tools/")


def test_the_wheel_carries_every_file_of_the_harness_folders(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=HARNESS_ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    src = tmp_path / "src"
    for rel in filter(None, tracked):
        if rel.startswith(SHIPPED) or rel in ("pyproject.toml", "README.md"):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HARNESS_ROOT / rel, src / rel)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(tmp_path / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = sorted(rel for rel in tracked if rel.startswith(SHIPPED))
    assert "build_steps/acceptance/shards.toml" in expected and "harness/plugins/finish.py" in expected
    missing = [rel for rel in expected if rel not in names]
    assert not missing, f"pyproject.toml leaves {len(missing)} file(s) out of the wheel: {missing[:12]}"
