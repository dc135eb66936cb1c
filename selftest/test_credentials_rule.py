"""Issue 40, defect 2: which variables are credentials is data (build_steps/credentials.toml), with its
cases, and the H100 host's TIKTOKEN_CACHE_DIR no longer stops a release run.

Every case of the data file is checked both ways; the old rule ("TOKEN anywhere") is kept here as the
regression the cases exist for: it refused a tokenizer's cache directory.
"""
from __future__ import annotations

import fnmatch

import pytest

from build_steps.credentials import RULE, is_credential_name, unexplained_credentials
from build_steps.errors import UsageError

#: the rule before issue 40, for the regression this data exists for
OLD_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*")


@pytest.mark.parametrize("name", RULE.credential_cases)
def test_a_credential_of_the_cases_is_one(name):
    assert is_credential_name(name)


@pytest.mark.parametrize("name", RULE.not_credential_cases)
def test_a_non_credential_of_the_cases_is_not_one(name):
    assert not is_credential_name(name)


def test_the_old_rule_refused_the_hosts_tokenizer_cache():
    # the regression: TOKEN anywhere in the name matched TIKTOKEN_CACHE_DIR
    assert any(fnmatch.fnmatchcase("TIKTOKEN_CACHE_DIR", p) for p in OLD_PATTERNS)
    assert "TIKTOKEN_CACHE_DIR" in RULE.not_credential_cases


def test_the_h100_hosts_environment_is_not_refused_but_a_token_beside_it_is():
    env = {"TIKTOKEN_CACHE_DIR": "/opt/tiktoken", "TOKENIZERS_PARALLELISM": "false", "PATH": "/usr/bin"}
    assert unexplained_credentials(env, {}) == []
    assert unexplained_credentials({**env, "HF_TOKEN": "hf_x", "GH_TOKEN": ""}, {}) == ["HF_TOKEN"]


def test_a_broken_rule_file_is_named(tmp_path):
    from build_steps.credentials import RULE_FILE, load_rule
    bad = tmp_path / "credentials.toml"
    bad.write_text(RULE_FILE.read_text().replace('words = ["TOKEN",', 'words = "TOKEN"\nx = [', 1))
    with pytest.raises(UsageError, match=r"credentials.toml: rule\b"):
        load_rule(bad)
