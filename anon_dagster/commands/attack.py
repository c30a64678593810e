"""``anon-dagster attack SPEC [--partition P] [--input DATA] [--json] [--secret COL ...]``: attack a release.

Takes the partition through the release pipeline with control records set aside before
anonymization (:func:`anon_dagster.risk.attacks.partition.attack_partition`) and runs the three
attacks of European guidance on what would be published: singling out, linkability, and
inference of each secret column (default: the spec's sensitive columns). Prints one row per
attack (main, control and baseline rates, residual risk and its interval, targets) or, with
``--json``, ``{"release", "partition", "method", "rows", "released_rows", "control",
"policy_unreachable", "attacks": [AttackResult.to_json()]}``. Nothing is published or written;
no value of any person is shown.

A synthetic release (``anonymization.method: synthetic``) is attacked as its gate attacks it
(:func:`anon_dagster.release.synthetic_attack.attack_synthetic`): the three attacks on the
synthetic table, the records it was made from as the main targets (scored like control
targets), and the audit's figures (exact-copy rate gap with its train and control shares,
closer-to-train gap, membership-inference AUC) with each declared bound's verdict; ``--json``
adds ``"synthetic"`` (the risk report's Synthetic data section), ``"checks"`` and ``"passed"``.
Without ``--targets``, ``--max-queries``, ``--max-seconds`` and ``--secret`` the figures are the
gate's and the report's.

Exit status: 0; 1 with ``--max-residual X`` when some attack's residual risk (point estimate)
exceeds X, or, on a synthetic release, when a bound of ``policy.synthetic`` or an attack of
``policy.attacks`` fails; 2 on bad input (one line, no traceback). Definitions: docs/attacks.md,
docs/synthetic.md.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import UserError
from ..risk.attacks import AttackConfig, Budget
from ..risk.attacks.engine import DEFAULT_TARGETS
from ..spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("attack", help="attack a release: singling out, linkability, inference (main vs control)",
                       description="Run the singling-out, linkability and inference attacks on what a release "
                                   "spec would publish for a partition, against people in it and people not in it.")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--partition", help="partition key (e.g. 2024 for a yearly release)")
    p.add_argument("--input", help="data to attack (default: the spec's source)")
    p.add_argument("--secret", action="extend", nargs="+", metavar="COL",
                   help="secret column(s) inference guesses (default: the spec's sensitive columns)")
    p.add_argument("--targets", type=int,
                   help=f"main and control targets each (default {DEFAULT_TARGETS}; 0: every person)")
    p.add_argument("--max-queries", type=int, help="stop an attack after this many queries")
    p.add_argument("--max-seconds", type=float, help="stop an attack after this many seconds")
    p.add_argument("--max-residual", type=float, metavar="X",
                   help="exit 1 when some attack's residual risk exceeds X")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore
    from ..release.pipeline import needs_keystore
    from ..risk.attacks.partition import attack_partition

    for name, value in (("--targets", args.targets), ("--max-queries", args.max_queries),
                        ("--max-seconds", args.max_seconds)):
        if value is not None and value < 0:
            raise UserError(f"{name} must not be negative, got {value:g}")
    if args.max_residual is not None and not -1.0 <= args.max_residual <= 1.0:
        raise UserError(f"--max-residual must lie in [-1, 1], got {args.max_residual:g}")
    spec = load_spec(args.spec)
    keystore = open_keystore() if needs_keystore(spec) else None
    targets = DEFAULT_TARGETS if args.targets is None else args.targets
    config = AttackConfig(targets=targets or None,
                          budget=Budget(max_queries=args.max_queries, max_seconds=args.max_seconds))
    if spec.anonymization.method == "synthetic":
        return _synthetic(args, spec, keystore, config)
    outcome = attack_partition(spec, partition=args.partition, input_path=args.input, keystore=keystore,
                               secrets=args.secret, config=config)
    print(json.dumps(outcome.to_json(), indent=2, ensure_ascii=False) if args.json else outcome.render_text())
    worst = outcome.worst_residual()
    if args.max_residual is not None and worst is not None and worst > args.max_residual:
        return 1
    return 0


def _synthetic(args: argparse.Namespace, spec: Any, keystore: Any, config: AttackConfig) -> int:
    """A synthetic release: the gate's audit and attacks (the gate's own configuration unless an
    option overrides it), exit 1 when a declared bound or attack fails."""
    from ..release.synthetic_attack import attack_synthetic

    own = args.targets is None and args.max_queries is None and args.max_seconds is None
    outcome = attack_synthetic(spec, partition=args.partition, input_path=args.input, keystore=keystore,
                               secrets=args.secret, config=None if own else config)
    print(json.dumps(outcome.to_json(), indent=2, ensure_ascii=False) if args.json else outcome.render_text())
    worst = max((r.residual for r in outcome.run.attacks.results if r.residual == r.residual), default=None)
    if outcome.failed or (args.max_residual is not None and worst is not None and worst > args.max_residual):
        return 1
    return 0


__all__ = ["register", "run"]
