"""HMAC-SHA256 of every value of an Arrow binary column, compiled (numba): the pseudonyms' hash.

HMAC(K, m) = SHA256((K ^ opad) || SHA256((K ^ ipad) || m)) (RFC 2104), SHA-256 as FIPS 180-4
defines it. The two keyed states (the compression of ``K ^ ipad`` and of ``K ^ opad``) are
computed once per column; each value then costs the compression of its own blocks and one more
for the outer hash: two compressions for a value of at most 55 bytes. CPython pays an
interpreter round trip, two hash objects and their copies per value (about 0.75 µs); the
compiled loop reads the values straight from the column's Arrow buffers, about four times faster
(0.25 µs; ten times ``hmac.new`` per value),
which is what lets a Spark executor or one process key tens of millions of identifiers.

The kernel is checked against :func:`hmac.new` on every length class (empty, one block, the
55/56 and 64-byte padding boundaries, several blocks, keys longer than a block) by the tests.
Compiled code is cached beside this module (numba's ``cache``): a new process loads it instead
of compiling it again.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
from numba import njit

BLOCK = 64
DIGEST = 32
MASK = 0xFFFFFFFF
# a value of at most 55 bytes fits one inner block with its padding (0x80 and the 8-byte length)
SHORT = BLOCK - 9
# the inner digest after the opad block: the outer message's length in bits
OUTER_BITS = (BLOCK + DIGEST) * 8
# messages compressed side by side: 32 lanes of 32-bit words fill two AVX-512 (four AVX2) registers
LANES = 32

# FIPS 180-4, 4.2.2 and 5.3.3
ROUND_CONSTANTS = np.array([
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
], dtype=np.int64)
INITIAL_STATE = np.array([0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                          0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19], dtype=np.int64)


def compiled(**options):
    """numba's ``njit`` with its code cached on disk, or, where no cache folder is writable (a
    read-only install without a writable home), compiled again in each process."""
    def wrap(fn):
        try:
            return njit(cache=True, **options)(fn)
        except RuntimeError:  # numba: "cannot cache function ...: no locator available"
            return njit(**options)(fn)
    return wrap


# Words are held in int64 and masked to 32 bits: every intermediate stays below 2^63, so no
# unsigned/signed promotion (which numba resolves to floats) enters the arithmetic.


@compiled(inline="always")
def rotr(x, n):
    """The 32-bit word ``x`` rotated right by ``n``."""
    return ((x >> n) | (x << (32 - n))) & MASK


@compiled()
def compress(state, w, block, at, k):
    """SHA-256's compression of the 64 bytes ``block[at:at + 64]`` into ``state`` (``w``: scratch, ``k``: the round constants)."""
    for t in range(16):
        j = at + 4 * t
        w[t] = ((np.int64(block[j]) << 24) | (np.int64(block[j + 1]) << 16)
                | (np.int64(block[j + 2]) << 8) | np.int64(block[j + 3]))
    for t in range(16, 64):
        s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
        s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) & MASK
    a, b, c, d, e, f, g, h = state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]
    for t in range(64):
        s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
        ch = (e & f) ^ ((e ^ MASK) & g)
        t1 = (h + s1 + ch + k[t] + w[t]) & MASK
        s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        t2 = (s0 + maj) & MASK
        h, g, f, e = g, f, e, (d + t1) & MASK
        d, c, b, a = c, b, a, (t1 + t2) & MASK
    state[0] = (state[0] + a) & MASK
    state[1] = (state[1] + b) & MASK
    state[2] = (state[2] + c) & MASK
    state[3] = (state[3] + d) & MASK
    state[4] = (state[4] + e) & MASK
    state[5] = (state[5] + f) & MASK
    state[6] = (state[6] + g) & MASK
    state[7] = (state[7] + h) & MASK


@compiled()
def keyed_states(padded_key, k, initial):
    """The states after the block ``K ^ ipad`` and after ``K ^ opad`` (``padded_key``: 64 bytes)."""
    w = np.empty(64, np.int64)
    inner = initial.copy()
    outer = initial.copy()
    block = np.empty(BLOCK, np.uint8)
    for j in range(BLOCK):
        block[j] = padded_key[j] ^ 0x36
    compress(inner, w, block, 0, k)
    for j in range(BLOCK):
        block[j] = padded_key[j] ^ 0x5C
    compress(outer, w, block, 0, k)
    return inner, outer


@compiled()
def hmac_scalar(data, offsets, which, inner, outer, k, out):
    """``out[i]`` = HMAC of value ``i`` (``data[offsets[i]:offsets[i + 1]]``) for each ``i`` of
    ``which``, from the keyed states, one value at a time (any length)."""
    w = np.empty(64, np.int64)
    state = np.empty(8, np.int64)
    tail = np.empty(2 * BLOCK, np.uint8)
    for i in which:
        start, end = offsets[i], offsets[i + 1]
        state[:] = inner
        at = start
        while end - at >= BLOCK:
            compress(state, w, data, at, k)
            at += BLOCK
        rest = end - at
        tail[:] = 0
        tail[:rest] = data[at:end]
        tail[rest] = 0x80
        blocks = 1 if rest <= SHORT else 2
        bits = (BLOCK + end - start) * 8  # the ipad block counts in the inner message's length
        last = blocks * BLOCK
        for b in range(8):
            tail[last - 1 - b] = (bits >> (8 * b)) & 0xFF
        for b in range(blocks):
            compress(state, w, tail, b * BLOCK, k)
        tail[:BLOCK] = 0
        for j in range(8):
            word = state[j]
            for b in range(4):
                tail[4 * j + b] = (word >> (24 - 8 * b)) & 0xFF
        tail[DIGEST] = 0x80
        tail[BLOCK - 2] = OUTER_BITS >> 8
        tail[BLOCK - 1] = OUTER_BITS & 0xFF
        state[:] = outer
        compress(state, w, tail, 0, k)
        for j in range(8):
            word = state[j]
            for b in range(4):
                out[i, 4 * j + b] = (word >> (24 - 8 * b)) & 0xFF


@compiled()
def compress_lanes(blocks, start, w, regs, state, k):
    """SHA-256's compression of ``blocks[lane]`` (64 bytes each) into ``state[:, lane]``, the
    :data:`LANES` lanes side by side: every step is one loop over the lanes, which the compiler
    turns into vector instructions (SIMD), where one message's rounds depend on each other."""
    a, b, c, d, e, f, g, h = regs[0], regs[1], regs[2], regs[3], regs[4], regs[5], regs[6], regs[7]
    for t in range(16):
        for j in range(LANES):
            w[t, j] = ((np.uint32(blocks[j, 4 * t]) << 24) | (np.uint32(blocks[j, 4 * t + 1]) << 16)
                       | (np.uint32(blocks[j, 4 * t + 2]) << 8) | np.uint32(blocks[j, 4 * t + 3]))
    for t in range(16, 64):
        for j in range(LANES):
            x = w[t - 15, j]
            y = w[t - 2, j]
            s0 = np.uint32(((x >> 7) | (x << 25)) ^ ((x >> 18) | (x << 14)) ^ (x >> 3))
            s1 = np.uint32(((y >> 17) | (y << 15)) ^ ((y >> 19) | (y << 13)) ^ (y >> 10))
            w[t, j] = np.uint32(w[t - 16, j] + s0 + w[t - 7, j] + s1)
    for j in range(LANES):
        a[j], b[j], c[j], d[j] = start[0], start[1], start[2], start[3]
        e[j], f[j], g[j], h[j] = start[4], start[5], start[6], start[7]
    for t in range(64):
        kt = np.uint32(k[t])
        for j in range(LANES):
            ej = e[j]
            aj = a[j]
            big1 = np.uint32(((ej >> 6) | (ej << 26)) ^ ((ej >> 11) | (ej << 21)) ^ ((ej >> 25) | (ej << 7)))
            choose = np.uint32((ej & f[j]) ^ (~ej & g[j]))
            t1 = np.uint32(h[j] + big1 + choose + kt + w[t, j])
            big0 = np.uint32(((aj >> 2) | (aj << 30)) ^ ((aj >> 13) | (aj << 19)) ^ ((aj >> 22) | (aj << 10)))
            majority = np.uint32((aj & b[j]) ^ (aj & c[j]) ^ (b[j] & c[j]))
            h[j], g[j], f[j], e[j] = g[j], f[j], ej, np.uint32(d[j] + t1)
            d[j], c[j], b[j], a[j] = c[j], b[j], aj, np.uint32(t1 + big0 + majority)
    for r in range(8):
        for j in range(LANES):
            state[r, j] = np.uint32(regs[r, j] + np.uint32(start[r]))


@compiled()
def hmac_lanes(data, offsets, which, inner, outer, k, out):
    """:func:`hmac_scalar` for values of at most :data:`SHORT` bytes (one inner block each),
    :data:`LANES` at a time."""
    w = np.empty((64, LANES), np.uint32)
    regs = np.empty((8, LANES), np.uint32)
    state = np.empty((8, LANES), np.uint32)
    blocks = np.zeros((LANES, BLOCK), np.uint8)
    for base in range(0, len(which), LANES):
        used = min(LANES, len(which) - base)
        blocks[:, :] = 0
        for j in range(used):
            i = which[base + j]
            start, length = offsets[i], offsets[i + 1] - offsets[i]
            for q in range(length):
                blocks[j, q] = data[start + q]
            blocks[j, length] = 0x80
            bits = (BLOCK + length) * 8
            blocks[j, BLOCK - 2] = (bits >> 8) & 0xFF
            blocks[j, BLOCK - 1] = bits & 0xFF
        compress_lanes(blocks, inner, w, regs, state, k)
        blocks[:, :] = 0
        for j in range(LANES):
            for r in range(8):
                word = state[r, j]
                for b in range(4):
                    blocks[j, 4 * r + b] = (word >> (24 - 8 * b)) & 0xFF
            blocks[j, DIGEST] = 0x80
            blocks[j, BLOCK - 2] = OUTER_BITS >> 8
            blocks[j, BLOCK - 1] = OUTER_BITS & 0xFF
        compress_lanes(blocks, outer, w, regs, state, k)
        for j in range(used):
            i = which[base + j]
            for r in range(8):
                word = state[r, j]
                for b in range(4):
                    out[i, 4 * r + b] = (word >> (24 - 8 * b)) & 0xFF


def padded_key(key: bytes) -> np.ndarray:
    """The HMAC block key: hashed first when longer than a block, zero-padded to 64 bytes."""
    key = bytes(key)
    if len(key) > BLOCK:
        key = hashlib.sha256(key).digest()
    return np.frombuffer(key.ljust(BLOCK, b"\0"), dtype=np.uint8)


def binary_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The data bytes and the ``n + 1`` offsets of a binary or string Arrow array (a slice's own;
    a null as the empty value)."""
    arr = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:  # a null's slot may hold bytes (Arrow allows it): read as the empty value
        arr = arr.fill_null(b"")
    _, offsets_buffer, data_buffer = arr.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data, offsets


@compiled()
def hmac_column_kernel(data, offsets, key_block, k, initial, out):
    """Every value's HMAC into ``out``: the keyed states once, the short values in lanes, the
    others one at a time. One compiled entry point, so a process loads one cached library."""
    inner, outer = keyed_states(key_block, k, initial)
    lengths = offsets[1:] - offsets[:-1]
    short = np.flatnonzero(lengths <= SHORT)
    if len(short):
        hmac_lanes(data, offsets, short, inner, outer, k, out)
    if len(short) < len(lengths):
        hmac_scalar(data, offsets, np.flatnonzero(lengths > SHORT), inner, outer, k, out)


def hmac_sha256_matrix(key: bytes, values: pa.Array) -> np.ndarray:
    """A (n, 32) uint8 matrix: row ``i`` the HMAC-SHA256 under ``key`` of value ``i`` (a null is
    keyed as the empty value: callers key present values only)."""
    data, offsets = binary_buffers(values)
    out = np.empty((len(offsets) - 1, DIGEST), dtype=np.uint8)
    if len(out):
        hmac_column_kernel(data, offsets, padded_key(key), ROUND_CONSTANTS, INITIAL_STATE, out)
    return out


__all__ = ["binary_buffers", "hmac_sha256_matrix", "padded_key"]
