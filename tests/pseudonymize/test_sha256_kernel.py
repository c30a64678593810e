"""HMAC-SHA256 digests, compiled kernel and interpreter, against the standard library, value for value."""

import hmac

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.pseudonymize import keyed_hash
from anon_dagster.pseudonymize.keyed_hash import hmac_column, hmac_concat, hmac_sha256_matrix
from anon_dagster.pseudonymize.sha256_kernel import LANES, SHORT


def reference(key: bytes, values: list[bytes]) -> list[bytes]:
    return [hmac.new(key, v, "sha256").digest() for v in values]


def rows(matrix) -> list[bytes]:
    return [bytes(r) for r in matrix]


# every padding case: empty, one block, the last length whose padding fits its block (55), the
# first that needs a second block (56), a whole block, several blocks
BOUNDARY_LENGTHS = [0, 1, SHORT - 1, SHORT, SHORT + 1, 63, 64, 65, 119, 120, 128, 300]


COMPILED = [True, False]  # the kernel, the interpreter


@pytest.mark.parametrize("compiled", COMPILED)
@pytest.mark.parametrize("key_length", [0, 1, 32, 63, 64, 65, 200])
def test_every_padding_case_and_key_length(key_length, compiled):
    key = bytes((7 * i + 3) % 256 for i in range(key_length))
    values = [bytes((i * 31 + n) % 256 for i in range(n)) for n in BOUNDARY_LENGTHS]
    assert rows(hmac_sha256_matrix(key, pa.array(values, pa.binary()), compiled)) == reference(key, values)


@pytest.mark.parametrize("n", [1, LANES - 1, LANES, LANES + 1, 3 * LANES + 5])
def test_lane_groups_of_any_size_and_long_values_between_short_ones(n):
    # short values go through the lanes, long ones one at a time: each digest lands on its own row
    values = [(b"x" * (SHORT + 10) if i % 7 == 3 else f"P{i:07d}".encode()) for i in range(n)]
    got = hmac_sha256_matrix(b"k" * 32, pa.array(values, pa.large_binary()), compiled=True)
    assert rows(got) == reference(b"k" * 32, values)


@pytest.mark.parametrize("compiled", COMPILED)
def test_a_slice_and_a_chunked_column_key_their_own_values(compiled):
    values = [f"id-{i}".encode() for i in range(100)]
    arr = pa.array(values, pa.binary())
    assert rows(hmac_sha256_matrix(b"key", arr.slice(37, 20), compiled)) == reference(b"key", values[37:57])
    chunked = pa.chunked_array([arr.slice(0, 40), arr.slice(40)])
    assert rows(hmac_sha256_matrix(b"key", chunked, compiled)) == reference(b"key", values)


@pytest.mark.parametrize("compiled", COMPILED)
def test_strings_are_keyed_as_their_utf8_bytes(compiled):
    texts = ["", "Åsa", "straße", "李小龙", "e\u0301"]
    got = rows(hmac_sha256_matrix(b"s" * 16, pa.array(texts, pa.string()), compiled))
    assert got == reference(b"s" * 16, [t.encode("utf-8") for t in texts])


@pytest.mark.parametrize("compiled", COMPILED)
def test_empty_column_and_nulls(compiled):
    assert hmac_sha256_matrix(b"k", pa.array([], pa.binary()), compiled).shape == (0, 32)
    got = rows(hmac_sha256_matrix(b"k", pa.array([b"a", None, b""], pa.binary()), compiled))
    assert got == reference(b"k", [b"a", b"", b""])  # both paths read a null as the empty value


def test_the_kernel_is_chosen_for_a_large_column_or_once_loaded(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, keyed_hash.KERNEL_MODULE, raising=False)
    assert not keyed_hash.compiled_for(keyed_hash.COMPILED_FROM - 1)
    assert keyed_hash.compiled_for(keyed_hash.COMPILED_FROM)
    hmac_sha256_matrix(b"k", pa.array([b"a"]), compiled=True)
    assert keyed_hash.compiled_for(1)  # loaded: a small column costs it nothing more


@settings(max_examples=60, deadline=None)
@given(key=st.binary(max_size=150), values=st.lists(st.binary(max_size=140), max_size=80),
       compiled=st.booleans())
def test_any_key_and_values_equal_the_standard_library(key, values, compiled):
    assert rows(hmac_sha256_matrix(key, pa.array(values, pa.binary()), compiled)) == reference(key, values)
    assert hmac_concat(key, values) == b"".join(reference(key, values))


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(min_size=1, max_size=60)), max_size=70),
       dedupe=st.booleans(), compiled=st.booleans())
def test_column_pseudonyms_are_the_truncated_hex_digests(values, dedupe, compiled):
    key = b"p" * 32
    got, distinct = hmac_column(key, pa.array(values, pa.string()), "v1:", dedupe=dedupe, compiled=compiled)
    expected = [None if v is None else "v1:" + hmac.new(key, v.encode(), "sha256").hexdigest()[:32] for v in values]
    assert got.to_pylist() == expected
    assert distinct == len({v for v in values if v is not None})


def test_without_a_writable_cache_folder_the_kernel_is_compiled_in_the_process(monkeypatch):
    """numba refuses ``cache=True`` where no cache folder is writable (a read-only install):
    the kernel is then compiled without a disk cache, and keys the same."""
    import importlib.util

    import numba

    import anon_dagster.pseudonymize.sha256_kernel as kernel

    real = numba.njit

    def no_cache_folder(*args, **options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f.py'")
        return real(*args, **options)

    monkeypatch.setattr(numba, "njit", no_cache_folder)
    spec = importlib.util.spec_from_file_location("sha256_kernel_uncached", kernel.__file__)
    uncached = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(uncached)
    values = [b"P0001", b"x" * 80, b""]
    assert rows(uncached.hmac_sha256_matrix(b"k" * 32, pa.array(values, pa.binary()))) == reference(b"k" * 32, values)
