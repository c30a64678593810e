"""``anon-dagster validate SPEC.yaml [--input DATA]``: check a release spec (and data).

Besides the spec itself: its publication target, for every partition, must stay clear of what
the release reads (source, hierarchy tables, population, the spec) and of what is kept private
(ledger, key store, Dagster's storage), with no symlink below the publication folder
(:func:`anon_dagster.release.targets.publication_problems`). Exit 2 on a problem.
"""

from __future__ import annotations

import argparse

from ..partitions import read_spec_table
from ..release.targets import TargetRefused, publication_problems
from ..spec import check_data, load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="validate a release spec, and optionally data against it")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--input", help="data to check against the spec (default: the spec's source, if present)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    problems = publication_problems(spec)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TargetRefused(problems[0] + more)
    checked_data = ""
    if args.input:
        df = read_spec_table(spec, args.input)  # identifiers as exact text, as the release reads them
        check_data(spec, df, source=args.input)
        checked_data = f", data {args.input} ({len(df)} rows) conforms"
    print(
        f"{args.spec}: release {spec.release!r} is valid: {len(spec.columns)} columns, "
        f"QIs {', '.join(spec.quasi_identifiers) or 'none'}{checked_data}"
    )
    return 0
