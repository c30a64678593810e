"""Identifier normalization's case folding (the ledger's default person spelling) and its options."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.pseudonymize.methods import normalize_identifiers


def fold(values: list[object]) -> list[object]:
    return normalize_identifiers(pd.Series(values, dtype=object), case="fold", unicode="NFKC").to_pylist()


def test_full_case_folding_joins_what_character_mapping_keeps_apart():
    # Arrow's upper case maps character by character: ß stays one character, so it differs from SS
    upper = normalize_identifiers(pd.Series(["straße", "STRASSE"]), case="upper").to_pylist()
    assert upper[0] != upper[1]
    assert fold(["straße", "STRASSE", "Strasse"]) == ["strasse"] * 3
    assert fold(["ΟΔΟΣ", "οδος", "οδοσ"]) == ["οδοσ"] * 3  # final sigma
    assert fold(["ǅ", "Ǆ", "ǆ", "DŽ"]) == ["dž"] * 4  # folding leaves NFKC: normalized again


def test_folding_keeps_nulls_and_empties_missing():
    assert fold([None, "  ", "ÄB", float("nan")]) == [None, None, "äb", None]


def test_ascii_only_folds_to_lower_case():
    assert fold(["PID1", " pid1 ", "Pid1"]) == ["pid1"] * 3


@pytest.mark.parametrize(("option", "value"), [("case", "Upper"), ("case", "casefold"), ("unicode", "nfc"),
                                               ("unicode", "NFD")])
def test_an_unknown_option_is_refused_not_ignored(option, value):
    """Silently skipping an option would key "a" and "A" apart while the spec says they are one."""
    with pytest.raises(ValueError, match=value):
        normalize_identifiers(pd.Series(["a"]), **{option: value})
