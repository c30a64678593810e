"""The starter of a new release project: a commented release spec that validates, the synthetic
data it reads, and the files that declare the component (``dg scaffold defs``: docs/dagster.md).

:func:`write_starter` writes, under a folder, ``specs/example_release.yaml`` and
``data/example.csv`` (200 generated rows of synthetic visits); a file that exists already is
kept as it is. The spec needs a key store and the publication ledger to be materialized, as its
comments say.
"""

from __future__ import annotations

import csv
import random
from datetime import date, timedelta
from pathlib import Path

SPECS_DIR = "specs"
EXAMPLE_SPEC = "example_release.yaml"
EXAMPLE_DATA = "data/example.csv"
EXAMPLE_ROWS = 200

DEFS_YAML = """\
# Privacy-gated releases: every release spec (*.yaml) in {specs}/ becomes an asset group
# <release>/raw -> pseudonymized -> anonymized -> published, with a blocking check per declared
# threshold. A spec that does not validate shows up as its own group (<name>/spec) whose failing
# check spec_valid lists every problem; the other releases load as usual.
type: {type_name}
attributes:
  config_dir: {specs}            # relative to this file; or `specs: [a.yaml, b.yaml]`
  # storage_dir: null          # intermediate tables (default under $DAGSTER_HOME)
  # reports_dir: null          # risk reports; may hold {{release}} (default reports/<release> beside {specs}/)
  # ledger_path: null          # the publication ledger (default $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)
  # automate: false            # true: publish eagerly once every blocking check passed
"""

COMPONENT_PY = """\
import dagster as dg

from {module} import {name}


@dg.component_instance
def load(context: dg.ComponentLoadContext) -> {name}:
    # every release spec of specs/ (relative to this folder) becomes an asset group
    return {name}(config_dir="{specs}")
"""

EXAMPLE_SPEC_TEXT = """\
# A starter release: synthetic clinic visits, published once as a 5-anonymous table.
# Edit it (or copy it) for your own data; every key is described in the release spec
# reference (docs/contracts.md of anon_dagster). Validate with:
#   anon-dagster validate {spec} --input {data}
#
# Loading (dg check defs, dg list defs, the UI) needs nothing more. Materializing needs:
#   - a key store, for the keyed pseudonyms of person_id and the ledger's integrity: set
#     ANON_DAGSTER_KEYSTORE (and ANON_DAGSTER_KEYSTORE_PASSPHRASE) to a file outside this
#     project, then `anon-dagster keys init`; to try this synthetic file only,
#     ANON_DAGSTER_DEV_KEYSTORE=1 uses a development store with a public passphrase;
#   - the publication ledger: `anon-dagster ledger init` (with the same key store settings).
release: example_release
description: Synthetic clinic visits (a starter release; replace with your own)
source:
  path: ../{data}          # csv or parquet, relative to this file
columns:                            # every source column is declared: no silent pass-through
  person_id:  {{role: identifier, pseudonymize: {{method: hmac, purpose: research}}}}  # keyed pseudonym
  full_name:  {{role: identifier}}                       # no pseudonymize method: dropped
  age:        {{role: quasi, hierarchy: {{type: interval, widths: [5, 10, 20]}}}}
  sex:        {{role: quasi}}
  region:     {{role: quasi}}
  visit_date: {{role: insensitive}}
  diagnosis:  {{role: sensitive}}
anonymization:
  method: global                    # global | mondrian | microaggregation | none
  k: 5
  max_suppression: 0.05             # share of rows that may be suppressed
policy:                             # declared before measuring; each threshold is a blocking check
  adversary: prosecutor
  thresholds: {{k: 5, prosecutor_max: 0.2}}
# Add `partitions: {{cadence: yearly, start: "2024-01-01", column: visit_date}}` for one release
# per year (a schedule runs each at the end of its period).
publication:
  path: ../published/{{release}}.parquet   # point it at your portal's folder
"""

_REGIONS = ["North", "South", "East", "West"]
_DIAGNOSES = ["A09", "E11", "I10", "J45", "M54"]


def example_rows(n: int = EXAMPLE_ROWS, seed: int = 20240101) -> list[dict[str, str | int]]:
    """``n`` synthetic visits (fixed seed): identifiers, a few quasi-identifiers, a diagnosis."""
    rng = random.Random(seed)
    start = date(2024, 1, 1)
    return [{
        "person_id": f"P{i:05d}",
        "full_name": f"Person {i:05d}",
        "age": rng.randint(18, 89),
        "sex": rng.choice(["F", "M"]),
        "region": rng.choice(_REGIONS),
        "visit_date": (start + timedelta(days=rng.randrange(366))).isoformat(),
        "diagnosis": rng.choice(_DIAGNOSES),
    } for i in range(n)]


def write_example_data(path: Path, n: int = EXAMPLE_ROWS) -> None:
    """:func:`example_rows` as a CSV file at ``path``."""
    rows = example_rows(n)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_new(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (and its folders) unless the file exists."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_starter(target: Path) -> None:
    """The starter spec and its data under ``target`` (files that exist are kept)."""
    write_new(target / SPECS_DIR / EXAMPLE_SPEC,
              EXAMPLE_SPEC_TEXT.format(spec=f"{SPECS_DIR}/{EXAMPLE_SPEC}", data=EXAMPLE_DATA))
    data = target / EXAMPLE_DATA
    if not data.exists():
        write_example_data(data)


def scaffold(target: Path, type_name: str, python: bool = False, append: bool = False) -> None:
    """What ``dg scaffold defs <type_name> <target>`` writes: ``component.py`` (``python``), else
    ``defs.yaml`` (appended as one more document to the file ``target`` with ``append``), then the
    starter beside it (:func:`write_starter`)."""
    if python:
        module, _, name = type_name.rpartition(".")
        write_new(target / "component.py", COMPONENT_PY.format(module=module, name=name, specs=SPECS_DIR))
    elif append:
        with target.open("a", encoding="utf-8") as f:
            f.write("---\n" + DEFS_YAML.format(type_name=type_name, specs=SPECS_DIR))
        target = target.parent
    else:
        write_new(target / "defs.yaml", DEFS_YAML.format(type_name=type_name, specs=SPECS_DIR))
    write_starter(target)


__all__ = ["COMPONENT_PY", "DEFS_YAML", "EXAMPLE_DATA", "EXAMPLE_ROWS", "EXAMPLE_SPEC", "EXAMPLE_SPEC_TEXT",
           "SPECS_DIR", "example_rows", "scaffold", "write_example_data", "write_new", "write_starter"]
