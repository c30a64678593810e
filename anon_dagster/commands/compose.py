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

import pandas as pd

from ..errors import DataError
from ..partitions import read_spec_table
from ..release import gate, pipeline, publication
from ..release.ledger import open_ledger
from ..spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compose", help="check a release against earlier publications of its population")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--input", help="data to check (default: the spec's source for the partition)")
    p.add_argument("--partition", help="partition key (e.g. 2024 for a yearly release)")
    p.add_argument("--anonymized", action="store_true",
                   help="the input is the table as it would be published (with the person column)")
    p.add_argument("--ledger", help="ledger file, which must exist (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore

    spec = load_spec(args.spec)
    keystore = open_keystore()
    ledger = open_ledger(args.ledger, keystore)  # a missing ledger is an error, never an empty one
    partition = args.partition or ""
    if spec.publication.mode == "aggregates":
        evaluation = pipeline.evaluate(spec, pd.DataFrame(), record=None, original=None, raw=None, ledger=ledger,
                                       partition=partition, only={"epsilon_budget"})
        return _print(evaluation.check("epsilon_budget"), args.json, f"{spec.release}/{partition or '-'}: ")
    if spec.composition is None:
        try:  # earlier publications of a population this spec no longer declares
            publication.refuse_population_change(spec, ledger)
        except publication.PublicationRefused as exc:
            print(exc)
            return 1
        print(f"{spec.release}: no composition declared: nothing to check")
        return 0
    if args.anonymized:
        df, path = (read_spec_table(spec, args.input), args.input) if args.input else (pipeline.ingest(spec, args.partition).data,
                                                                            "the spec's source")
        person = spec.composition.person
        if person not in df.columns:
            raise DataError(f"{path}: no column {person!r} (composition.person)")
        # the table as it would be published, its person column turned into linkage pseudonyms
        linked = df.drop(columns=[person]).assign(**{gate.LINKAGE_COLUMN: pipeline.linkage_column(spec, df, keystore)})
        evaluation = pipeline.evaluate(spec, linked, record=None, original=None, raw=None, ledger=ledger,
                                       partition=partition, only={"composition"})
    else:
        evaluation = pipeline.run_gate(spec, partition=args.partition, input_path=args.input, keystore=keystore,
                                       ledger=ledger, only={"composition"}).evaluation
    return _print(evaluation.check("composition"), args.json)


def _print(result, as_json: bool, prefix: str = "") -> int:
    """The check's details as JSON, or its summary; exit 0 when it passed, 1 when it failed."""
    if as_json:
        print(json.dumps(result.details.get("composition") or {"passed": False, "error": result.summary},
                         sort_keys=True))
    else:
        print(prefix + result.summary)
    return 0 if result.passed else 1
