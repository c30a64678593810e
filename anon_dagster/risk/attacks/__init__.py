"""Attack-based evaluation of a release: singling out, linkability and inference.

European guidance (the Article 29 Working Party's Opinion 05/2014 on anonymisation techniques)
judges anonymization by three risks: *singling out* a person, *linking* records of one person,
and *inferring* an attribute of a person. The kernel's other figures are syntactic criteria
(k, l, t, the risk models); these are attacks, run against the release as an attacker would, and
each reports what it achieves against people who are in the release (*main* targets) beside what
it achieves against people who are not (*control* targets), whose figure is what the
population's regularities alone give:

- :func:`singling_out` (:mod:`.singling_out`): predicates from a target's values isolate them;
- :func:`linkability` (:mod:`.linkability`): two partial records of a target meet at one person;
- :func:`inference` (:mod:`.inference`): a target's secret is guessed from the class they fall in.

Every attack compares the attacker's raw records with the release's labels by recoding them
through the transformation record (:func:`recode_targets`), counts persons (rows linked by a
pseudonym are one person), counts ties as ``1/t``, draws everything from a seed taken from the
release's output hash, and reports an :class:`AttackResult` (main, control and baseline rates,
residual risk ``(main - control) / (1 - control)`` with its interval) holding no value of any
person. Definitions and their reasoning: docs/attacks.md.

:func:`run_attacks` runs all of them; :func:`select_control` chooses the control records of a
partition before it is anonymized.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...anonymize.record import TransformationRecord
from ...hierarchies import Hierarchy
from .coding import ReleaseCoding, recode_targets, seed_of
from .engine import AttackConfig, AttackSetup, prepare
from .inference import inference
from .linkability import default_parts, linkability
from .result import AttackResult, Budget, Rate, residual, residual_interval, wilson
from .singling_out import singling_out
from .targets import ControlSplit, Targets, select_control, withheld_rows

ATTACKS = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


def run_attacks(release: pd.DataFrame, originals: pd.DataFrame, control: pd.DataFrame, *,
                columns: Sequence[str], secrets: Sequence[str] = (), record: TransformationRecord | None = None,
                hierarchies: dict[str, Hierarchy] | None = None, persons: pd.Series | None = None,
                control_persons: pd.Series | None = None, config: AttackConfig | None = None,
                seed: int | None = None, attacks: Sequence[str] = ATTACKS,
                synthetic: bool = False) -> list[AttackResult]:
    """Every attack of ``attacks`` on one release, in that order (inference once per secret).

    ``release``: the published rows; ``originals``: the same rows before anonymization, in the
    same order (the main targets' records); ``control``: records never released (the control
    targets'); ``columns``: what the attacker knows of a target (the QIs); ``secrets``: the
    columns inference guesses; ``record`` and ``hierarchies``: the transformation record that
    produced the release and the spec's hierarchies (None: the release publishes its values
    unchanged); ``persons``/``control_persons``: each row's person (a pseudonym linking rows;
    None: one person per row). ``seed`` defaults to the release's output hash (:func:`seed_of`).
    ``synthetic``: ``release`` is a synthetic table made from ``originals`` (any number of them;
    :func:`~.engine.prepare`).
    """
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown:
        raise ValueError(f"unknown attack {unknown[0]!r} (attacks: {', '.join(ATTACKS)})")
    setup = prepare(release, originals, control, columns=columns, secrets=secrets, record=record,
                    hierarchies=hierarchies, persons=persons, control_persons=control_persons,
                    config=config, seed=seed, synthetic=synthetic)
    return attack(setup, attacks, secrets)


def attack(setup: AttackSetup, attacks: Sequence[str] = ATTACKS, secrets: Sequence[str] = ()) -> list[AttackResult]:
    """The attacks of ``attacks`` on a prepared setup (:func:`prepare`)."""
    out = []
    for name in attacks:
        if name == "singling_out_univariate":
            out.append(singling_out(setup, "univariate"))
        elif name == "singling_out_multivariate":
            out.append(singling_out(setup, "multivariate"))
        elif name == "linkability":
            if len(setup.columns) >= 2:
                out.append(linkability(setup))
        elif name == "inference":
            out += [inference(setup, s) for s in secrets]
    return out


__all__ = [
    "ATTACKS", "AttackConfig", "AttackResult", "AttackSetup", "Budget", "ControlSplit", "Rate", "ReleaseCoding",
    "Targets", "attack", "default_parts", "inference", "linkability", "prepare", "recode_targets", "residual",
    "residual_interval", "run_attacks", "seed_of", "select_control", "singling_out", "wilson", "withheld_rows",
]
