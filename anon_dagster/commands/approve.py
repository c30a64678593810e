"""``anon-dagster approve|reject SPEC --partition P --evaluation ID --as NAME [--reason TEXT]``.

Records an approver's decision on an evaluation awaiting approval
(:func:`~anon_dagster.release.governance.decide`): in the custody log (the key store's audit
log, ``$ANON_DAGSTER_AUDIT_LOG`` else beside the key store) and in the ledger, bound to the evaluation's id, spec hash, data hash and code version. A
rejection needs ``--reason``. Refused with one line and exit status 2 (nothing recorded): an
approver not in ``approval.approvers``, the evaluation's runner approving with
``approval.distinct_from_runner``, an unknown, refused or rejected evaluation, a spec or code
changed since the evaluation, a second decision by the same approver. Exit 0 once recorded.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    for name, verb in (("approve", "approve"), ("reject", "reject")):
        p = sub.add_parser(name, help=f"{verb} an evaluation awaiting approval (recorded in the ledger and custody log)",
                           description=f"{verb.capitalize()} an evaluation awaiting approval, as one of the spec's "
                                       "approval.approvers.")
        p.add_argument("spec", help="release spec (YAML)")
        p.add_argument("--partition", help="partition key of the evaluation")
        p.add_argument("--evaluation", required=True, help="the evaluation's id (printed by the publication)")
        p.add_argument("--as", dest="approver", required=True, metavar="NAME", help="who decides (an approver of the spec)")
        p.add_argument("--reason", required=name == "reject", default="",
                       help="why (recorded in the ledger, the custody log and the report)")
        p.add_argument("--ledger", help="ledger file (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
        p.set_defaults(handler=run, decision=verb)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore
    from ..release.governance import decide
    from ..release.ledger import open_ledger
    from ..spec import load_spec

    spec = load_spec(args.spec)
    keystore = open_keystore()
    ledger = open_ledger(args.ledger, keystore)
    done = decide(spec, ledger, partition=args.partition, evaluation=args.evaluation, approver=args.approver,
                  decision=args.decision, reason=args.reason, keystore=keystore)
    print(done.describe())
    return 0
