"""What pip and the interpreter decide from the wheel's METADATA, entry points and file names
(build_steps.readers.wheel_contract): pip installs it where its tags say, `import` loads its
extension modules, and its scripts replace nothing the venv already has."""
import pytest

from build_steps.readers.wheel_contract import (extension_module_problems, requires_python_problems,
                                                script_problems)

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_requires_python_admits_the_tags(extracted_wheel):
    meta = extracted_wheel.metadata
    bad = requires_python_problems(extracted_wheel.tags, meta.get("Requires-Python") if meta is not None else None)
    if bad:
        pytest.fail(f"{extracted_wheel.filename} METADATA contradicts its tags:\n  " + "\n  ".join(bad)
                    + "\nfix: python_requires in setup.py must admit the Python the wheel is built for",
                    pytrace=False)


def test_extension_modules_match_the_tags(extracted_wheel):
    bad = extension_module_problems(extracted_wheel.tags, extracted_wheel.members)
    if bad:
        pytest.fail(f"{extracted_wheel.filename} carries {len(bad)} extension module(s) built for another "
                    "Python:\n  " + "\n  ".join(bad[:20]) + "\nfix: build the extensions with the "
                    "interpreter the wheel is tagged for (a stale build/ of another Python leaks in)",
                    pytrace=False)


def test_scripts_replace_nothing_in_the_venv(extracted_wheel):
    if extracted_wheel.dist_info is None:
        pytest.fail(f"{extracted_wheel.filename} has no .dist-info: its scripts cannot be read", pytrace=False)
    bad = script_problems(extracted_wheel.root / extracted_wheel.dist_info, extracted_wheel.tags,
                          extracted_wheel.requires_dist)
    if bad:
        pytest.fail(f"{extracted_wheel.filename} entry_points.txt declares {len(bad)} script(s) named like "
                    "another's:\n  " + "\n  ".join(bad) + "\nfix: rename them in setup.py's entry_points",
                    pytrace=False)
