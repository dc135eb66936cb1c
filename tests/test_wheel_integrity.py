"""The wheel is what it says it is: name, PEP 440 version, intact RECORD, a real libmxnet.so."""
import pytest

from build_steps.versions import scheme_problem

pytestmark = [pytest.mark.release, pytest.mark.provenance]


def test_wheel_name_and_version(audit, options):
    problems = []
    if audit.distribution != "mxnet":
        problems.append(f"{audit.filename}: distribution {audit.distribution!r} is not 'mxnet': "
                        "the package was built from the wrong setup.py (build from python/setup.py)")
    if options.package_version and audit.version != options.package_version:
        problems.append(f"{audit.filename}: version {audit.version} does not match the expected "
                        f"--package-version {options.package_version}: a stale wheel from an earlier "
                        "build was picked up; clear dist/ and rebuild with the release version")
    problems += [f"{audit.filename}: {p}" for p in audit.metadata_problems]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_version_follows_release_scheme(audit, profile):
    # The scheme is the profile's (build_steps.versions), judged on the wheel itself, so an
    # audited --wheel meets it as a built one does: a real date, the profile's local segment.
    problem = scheme_problem(str(audit.version), profile)
    if problem:
        pytest.fail(f"{audit.filename}: {problem}; fix: build with --wheel-version (or the default "
                    f"{profile.default_version()})", pytrace=False)


def test_record_hashes(audit):
    if audit.record_problems:
        pytest.fail(f"{audit.filename}: RECORD does not match the wheel's contents "
                    f"({len(audit.record_problems)} problem(s)): " + "; ".join(audit.record_problems[:10])
                    + " -- the wheel was modified after it was built or the download is corrupt; "
                    "rebuild it (never edit a wheel in place)", pytrace=False)


@pytest.mark.elf
def test_libmxnet_is_elf(audit):
    if audit.libmxnet_error:
        pytest.fail(audit.libmxnet_error, pytrace=False)
    assert audit.libmxnet is not None and audit.libmxnet.needed is not None
