"""``python -m anon_dagster.demo generate|run|hierarchies`` (see docs/demo.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import UserError
from .generate import (
    DEFAULT_DISCHARGES,
    DEFAULT_POPULATION,
    DEFAULT_SEED,
    REPO_ROOT,
    default_out_dir,
    generate,
    write_hierarchies,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m anon_dagster.demo", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    g = sub.add_parser("generate", help="write population.parquet and discharges.parquet")
    g.add_argument("--out", help=f"output folder (default: {default_out_dir().relative_to(REPO_ROOT) if default_out_dir().is_relative_to(REPO_ROOT) else default_out_dir()})")
    g.add_argument("--population", type=int, default=DEFAULT_POPULATION, help="people (default %(default)s)")
    g.add_argument("--discharges", type=int, default=DEFAULT_DISCHARGES, help="discharges (default %(default)s)")
    g.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default %(default)s)")
    g.add_argument("--force", action="store_true", help="regenerate even when the files are current")
    sub.add_parser("run", help="generate with defaults, then print the demo release's risk figures")
    h = sub.add_parser("hierarchies", help="write the demo hierarchy files (ARX CSV)")
    h.add_argument("--out", default=str(REPO_ROOT / "assets_config" / "hierarchies"),
                   help="folder (default: assets_config/hierarchies)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "generate":
            manifest = generate(args.out, args.population, args.discharges, args.seed, force=args.force)
            out = args.out or default_out_dir()
            verb = "already current, skipped" if manifest["skipped"] else "written"
            for name, info in manifest["files"].items():
                print(f"{out}/{name}: {info['rows']:,} rows ({verb})")
            return 0
        if args.command == "hierarchies":
            for path in write_hierarchies(args.out):
                print(path)
            return 0
        from .run import run_demo

        return run_demo()
    except UserError as exc:
        print(f"anon_dagster.demo {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
