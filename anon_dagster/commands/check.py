"""``anon-dagster check SPEC [--partition P] [--input DATA] [--json]``: the whole gate outside Dagster.

Takes the partition through the release pipeline (ingest, pseudonymize, anonymize, evaluate:
every declared threshold, utility query, the composition with the ledger's earlier
publications and the data contract), exactly as the Dagster assets and checks do, and prints
the outcome of every check. Nothing is published and nothing is written.

Exit status: 0 when every blocking check passes, 1 when the release would be refused, 2 on
bad input (one line, no traceback). ``--json`` prints ``{"release", "partition", "verdict":
"pass"|"fail", "checks": [{"name", "spec_key", "passed", "severity", "measured",
"threshold"}], "evaluation"}``.

``--engine spark`` takes the rows through the same gate on Spark (``--spark-master``, default
``local[2]``): the same checks and verdicts, from frequency tables Spark aggregates
(docs/scale.md).
"""

from __future__ import annotations

import argparse
import json

from ..release.ledger import open_ledger
from ..release.pipeline import needs_keystore
from ..spec import load_spec
from ._engine import add_engine_arguments, engine_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="run the whole release gate on a partition (what Dagster's checks decide)",
                       description="Run every check of a release spec on a partition; publish nothing.")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--partition", help="partition key (e.g. 2024 for a yearly release)")
    p.add_argument("--input", help="data to check (default: the spec's source)")
    p.add_argument("--ledger", help="ledger file, which must exist (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    add_engine_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore

    spec = load_spec(args.spec)
    # the ledger is read when a check needs it, or when one is named (a mistyped --ledger is an error)
    wants_ledger = args.ledger is not None or spec.composition is not None or spec.publication.mode == "aggregates"
    keystore = open_keystore() if needs_keystore(spec) or wants_ledger else None
    ledger = open_ledger(args.ledger, keystore) if wants_ledger else None
    with engine_of(args) as engine:
        evaluation = engine.run_gate(spec, partition=args.partition, input_path=args.input, keystore=keystore,
                                     ledger=ledger).evaluation
    print(json.dumps(evaluation.to_json(), indent=2, ensure_ascii=False) if args.json else evaluation.render_text())
    return 0 if evaluation.passed else 1
