"""``anon-dagster compose SPEC [--input DATA] [--partition P]``: the composition check, for CI.

For a release that publishes rows, the table that would be published is composed with every
earlier publication of the same population recorded in the ledger (intersection and
sequential-release attacks, see :mod:`anon_dagster.release.composition`). By default the input
is the spec's raw source, anonymized here; with ``--anonymized`` it is the table as it would be
published, still holding the ``composition.person`` column with its original values. For a
release that publishes DP aggregates, the population's epsilon budget is checked instead.

Exit status: 0 when the check passes, 1 when it fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json

from ..errors import DataError
from ..io import read_table
from ..partitions import read_release_data
from ..release.dp import budget_population, epsilon_spend
from ..release.ledger import Ledger
from ..release.publish import compose, spec_assignment
from ..spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compose", help="check a release against earlier publications of its population")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--input", help="data to check (default: the spec's source for the partition)")
    p.add_argument("--partition", help="partition key (e.g. 2024 for a yearly release)")
    p.add_argument("--anonymized", action="store_true",
                   help="the input is the table as it would be published (with the person column)")
    p.add_argument("--ledger", help="ledger file (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=run)


def _linkage_key() -> bytes:
    from ..pseudonymize import open_keystore

    return open_keystore().derive_key("ledger-linkage")


def run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    ledger = Ledger(args.ledger)
    partition = args.partition or ""
    if spec.publication.mode == "aggregates":
        eps, total, method, delta = epsilon_spend(spec)
        state = ledger.budget(budget_population(spec), epsilon=eps, total=total, composition=method, delta=delta)
        if args.json:
            print(json.dumps(state.to_dict(), sort_keys=True))
        else:
            print(
                f"{spec.release}/{partition or '-'}: population {state.population!r} has spent "
                f"epsilon {state.composed_before:.4g} of {total:g} ({method} composition); this release "
                f"({eps:g}) would bring it to {state.composed_after:.4g}: "
                + ("PASSED" if state.allowed else "FAILED (budget exceeded)")
            )
        return 0 if state.allowed else 1
    if spec.composition is None:
        print(f"{spec.release}: no composition declared: nothing to check")
        return 0
    person = spec.composition.person
    if args.anonymized and args.input:
        df, path = read_table(args.input), args.input  # already the partition, as it would be published
    else:
        df, path = read_release_data(spec, partition or None, args.input)
    if person not in df.columns:
        raise DataError(f"{path}: no column {person!r} (composition.person)")
    if args.anonymized:
        published = df
        persons = published[person]
    else:
        from ..anonymize import anonymize

        raw = df
        result = anonymize(raw, spec)
        published = result.data
        persons = raw.loc[published.index, person]
    assignment = spec_assignment(spec, published, persons.reset_index(drop=True), linkage_key=_linkage_key())
    result = compose(spec, assignment, ledger, partition=partition)
    if args.json:
        print(json.dumps(result.to_dict(), sort_keys=True))
    else:
        print(result.text)
    return 0 if result.passed else 1
