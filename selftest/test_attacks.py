"""The attack corpus (selftest/attacks/, issue 41): every attack, replayed.

Each attack module plants a tree, build dir, wheel or repo that attacks the harness (``plant``),
and says how the harness meets it (``with_harness``: the harness's own code, which must refuse
in one clear line or stay harmless). Where the module also says how the unfixed code met it
(``without_fix``: plain git, the cached tool, an unchecked open), that runs first on a fresh
plant and must fire, or the attack proves nothing. See selftest/attacks/README.md.
"""
from __future__ import annotations

import importlib
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
