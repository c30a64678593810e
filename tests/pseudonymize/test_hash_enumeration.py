"""The enumeration example: salted SHA-256 of small-space IDs is reversed (reduced space here)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hash_enumeration.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("hash_enumeration", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_letter_is_the_mod_23_rule(example):
    assert example.national_id(12345678) == "12345678Z"  # 12345678 % 23 == 14 -> 'Z'
    assert example.national_id(0) == "00000000T"
    assert example.national_id(42, digits=4) == "0042" + "TRWAGMYFPDXBNJZSQVHLCKE"[42 % 23]


@pytest.mark.parametrize("salt", [b"", b"public-salt"])
def test_every_hash_of_the_space_is_recovered(example, salt):
    ids = [example.national_id(n, 4) for n in (0, 17, 4242, 9999)]
    hashes = {hashlib.sha256(salt + i.encode()).hexdigest(): i for i in ids}
    assert example.recover(set(hashes), 4, salt) == hashes


def test_an_id_outside_the_space_is_not_invented(example):
    outside = hashlib.sha256(b"12345678Z").hexdigest()
    assert example.recover({outside}, 3) == {}


def test_main_reports_rate_and_whole_space_time(example, capsys):
    assert example.main(["--digits", "4", "--targets", "3"]) == 0
    out = capsys.readouterr().out
    assert "hashes/s on one core" in out and "whole 8-digit+letter space" in out
    assert "recovered 3/3" in out
