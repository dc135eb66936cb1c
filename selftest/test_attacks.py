"""The attack corpus (selftest/attacks/, issue 41): every attack, replayed.

Each attack module plants a tree, build dir, wheel or repo that attacks the harness (``plant``),
and says how the harness meets it (``with_harness``: the harness's own code, which must refuse
in one clear line or stay harmless). Where the module also says how the unfixed code met it
(``without_fix``: plain git, the cached tool, an unchecked open), that runs first on a fresh
plant and must fire, or the attack proves nothing. See selftest/attacks/README.md.
"""
from __future__ import annotations

import importlib
import os
import pkgutil

import pytest

import selftest.attacks as corpus


def attack_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(corpus.__path__) if not m.name.startswith("_"))


def test_the_corpus_is_not_empty():
    assert len(attack_names()) >= 1


@pytest.mark.parametrize("name", attack_names())
def test_attack(name, tmp_path):
    attack = importlib.import_module(f"selftest.attacks.{name}")
    assert attack.__doc__, f"{name}: say in the docstring what it attacks"
    if hasattr(attack, "without_fix"):
        live = attack.plant(tmp_path / "without-fix")
        attack.without_fix(live)
        assert live.fired(), f"{name}: the payload never ran without the fix, so the attack proves nothing"
    planted = attack.plant(tmp_path / "with-harness")
    attack.with_harness(planted)
    assert not planted.fired(), f"{name}: the payload ran through the harness: {planted.evidence()}"


@pytest.fixture(scope="module")
def user_checkout():
    """This checkout and venv copied for an unprivileged uid (selftest/unprivileged_run.py); made
    once, removed after the module."""
    from selftest.unprivileged_run import Unavailable, make_user_checkout
    try:
        made = make_user_checkout()
    except Unavailable as e:
        pytest.fail(f"as root the corpus must also run as an unprivileged user, and that cannot be set up: {e}")
    yield made
    made.remove()


#: attacks on what only root has (its capabilities): as a user they skip, saying so
ROOT_ONLY = ("needs a harness that runs as root",)


@pytest.mark.skipif(os.geteuid() != 0, reason="run as a user already: test_attack above is the user's run")
def test_the_corpus_holds_as_an_unprivileged_user(user_checkout):
    """Issue 41, "as root and as a user": CI runs the selftests as root, so there every attack runs
    again as an unprivileged uid, from a copy of this checkout and venv the uid can read (the
    checkout, its venv or its Python may be under /root, 0700). One child pytest runs the whole
    corpus with test_attack's own assertions; every attack must pass there, or skip because it
    attacks what only root has."""
    from selftest.unprivileged_run import USER_UID, outcomes
    proc, junit = user_checkout.pytest("selftest/test_attacks.py::test_attack", "-q", "-rs")
    report = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert junit.is_file(), f"the run as uid {USER_UID} did not start: {report}"
    got = outcomes(junit)
    ran = {name[len("test_attack["):-1]: outcome for name, outcome in got.items() if name.startswith("test_attack[")}
    assert sorted(ran) == attack_names(), f"as uid {USER_UID} the corpus ran other attacks: {sorted(ran)} ({report})"
    failed = {n: m for n, (o, m) in ran.items() if o == "failed"}
    assert not failed, f"as uid {USER_UID} these attacks got through or broke: {failed} ({report})"
    skipped = {n: m for n, (o, m) in ran.items() if o == "skipped" and not any(r in m for r in ROOT_ONLY)}
    assert not skipped, f"as uid {USER_UID} these attacks did not run: {skipped}"
    assert proc.returncode == 0, report


@pytest.mark.skipif(os.geteuid() != 0, reason="only root starts a run as another uid")
def test_as_root_a_user_run_that_cannot_start_is_a_failure_naming_why(tmp_path):
    """Fail closed: where the uid has no Python to run (here the only one offered lies in a dir of
    root's, mode 0700, as a pyenv build under /root does), setting up the user run raises, and the
    fixture turns that into a failure, never a skip."""
    import sys

    from selftest.unprivileged_run import Unavailable, choose_python
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    (private / "python3").symlink_to(os.path.realpath(sys.executable))
    with pytest.raises(Unavailable, match=r"no Python 3\.\d+ that uid \d+ can run \(tried .*root-only/python3: "
                                          r".*Permission denied"):
        choose_python([str(private / "python3")], tmp_path)
