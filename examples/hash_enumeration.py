"""Why a plain (or publicly salted) hash is not a pseudonym: recover the IDs by enumeration.

A national ID of 8 digits and a check letter (the letter is ``"TRWAGMYFPDXBNJZSQVHLCKE"[n % 23]``)
has only 10**8 possible values. Whoever sees ``sha256(id)`` — or ``sha256(salt + id)`` with a
salt that ships with the data or the code — hashes all 10**8 candidates and reads the IDs off a
dictionary: minutes on one core in plain Python, well under a second on a GPU. A keyed HMAC
with the key kept apart cannot be enumerated: without the key there is nothing to compute.

    python examples/hash_enumeration.py                # 6-digit space, then extrapolates to 8
    python examples/hash_enumeration.py --digits 8     # the whole space (about 1-2 minutes)
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import random
import time

CHECK_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def national_id(number: int, digits: int = 8) -> str:
    """The ID of ``number``: zero-padded digits and its check letter."""
    return f"{number:0{digits}d}{CHECK_LETTERS[number % 23]}"


def naive_pseudonym(identifier: str, salt: bytes = b"") -> str:
    """What a careless pipeline publishes: SHA-256 of a public salt and the ID, in hex."""
    return hashlib.sha256(salt + identifier.encode()).hexdigest()


def recover(hashes: set[str], digits: int, salt: bytes = b"") -> dict[str, str]:
    """Enumerate every ``digits``-digit ID; return the hash → ID of those found in ``hashes``."""
    found: dict[str, str] = {}
    base = hashlib.sha256(salt)  # the salt is absorbed once; each candidate continues from it
    for number in range(10**digits):
        candidate = national_id(number, digits)
        h = base.copy()
        h.update(candidate.encode())
        digest = h.hexdigest()
        if digest in hashes:
            found[digest] = candidate
            if len(found) == len(hashes):
                break
    return found


def hash_rate(seconds: float = 1.0, salt: bytes = b"") -> float:
    """Candidates hashed and compared per second by :func:`recover`'s loop on this machine."""
    targets = {"0" * 64}
    base = hashlib.sha256(salt)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for number in range(count, count + 100_000):
            h = base.copy()
            h.update(national_id(number).encode())
            _ = h.hexdigest() in targets
        count += 100_000
    return count / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", type=int, default=6, help="size of the ID space searched (8 = the real one)")
    parser.add_argument("--targets", type=int, default=5, help="how many published hashes to reverse")
    parser.add_argument("--salt", default="public-salt-2024", help="the salt (public: shipped with the data)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    salt = args.salt.encode()
    rng = random.Random(args.seed)
    secret_ids = [national_id(rng.randrange(10**args.digits), args.digits) for _ in range(args.targets)]
    published = {naive_pseudonym(i, salt): i for i in secret_ids}
    print(f"published {len(published)} salted SHA-256 'pseudonyms' of {args.digits}-digit IDs, e.g. {next(iter(published))[:20]}...")

    rate = hash_rate(1.0, salt)
    full_space = 10**8
    print(f"measured: {rate:,.0f} hashes/s on one core (Python hashlib)")
    print(f"whole 8-digit+letter space: {full_space:,} IDs -> {full_space / rate:,.0f} s on one core "
          f"({full_space / rate / 60:.1f} min); a GPU at an assumed 1e10 SHA-256/s needs {full_space / 1e10 * 1e3:.0f} ms")

    start = time.perf_counter()
    found = recover(set(published), args.digits, salt)
    elapsed = time.perf_counter() - start
    print(f"enumerated the {args.digits}-digit space ({10**args.digits:,} IDs max) in {elapsed:.2f} s: "
          f"recovered {len(found)}/{len(published)}")
    for digest, ident in found.items():
        assert published[digest] == ident
        print(f"  {digest[:16]}...  ->  {ident}")

    key = os.urandom(32)  # kept in the key store, never with the data
    keyed = hmac.new(key, secret_ids[0].encode(), "sha256").hexdigest()[:32]
    print(f"a keyed HMAC pseudonym ({keyed}) cannot be enumerated: each guess needs the 256-bit key")
    return 0 if len(found) == len(published) else 1


if __name__ == "__main__":
    raise SystemExit(main())
