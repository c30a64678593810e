"""Release spec v1: typed models, YAML loading relative to the spec's folder, validation.

A release spec declares one periodic publication: its source, partitions, the role of every
column, the anonymization, the risk policy (thresholds declared before measuring), utility
queries, composition with earlier releases and the publication target. Validation reports
*every* problem at once, each with file, key and column (:class:`~anon_dagster.errors.SpecError`).

Modules: :mod:`.columns` (roles, pseudonymization, hierarchies), :mod:`.policy` (adversary,
population, the thresholds derived from the criteria registry, the attacks), :mod:`.models` (the release
spec and its derived views), :mod:`.loading` (YAML, validation, data checks).
"""

from .columns import (
    DEFAULT_PSEUDONYM_SCOPE,
    ENUMERATION_WARNING,
    PSEUDONYM_SCOPES,
    SAFE_PSEUDONYM_METHODS,
    UNSAFE_HASHES,
    ColumnSpec,
    DateSpec,
    HierarchySpec,
    IntervalSpec,
    MaskSpec,
    NormalizeSpec,
    PseudonymizeSpec,
    PseudonymScope,
    Role,
    TableSpec,
    build_hierarchy,
)
from .loading import (
    check_data,
    discover_specs,
    iter_problems,
    load_spec,
    load_specs,
    spec_from_dict,
)
from .models import (
    AnonymizationSpec,
    Cadence,
    CompositionSpec,
    PartitionsSpec,
    PublicationSpec,
    ReleaseSpec,
    SourceSpec,
    UtilityQuerySpec,
)
from .policy import (
    AttackControlSpec,
    AttacksSpec,
    PolicySpec,
    PopulationSpec,
    RecursiveCL,
    ThresholdsSpec,
)

__all__ = [
    "DEFAULT_PSEUDONYM_SCOPE",
    "ENUMERATION_WARNING",
    "PSEUDONYM_SCOPES",
    "SAFE_PSEUDONYM_METHODS",
    "UNSAFE_HASHES",
    "AnonymizationSpec",
    "AttackControlSpec",
    "AttacksSpec",
    "Cadence",
    "ColumnSpec",
    "CompositionSpec",
    "DateSpec",
    "HierarchySpec",
    "IntervalSpec",
    "MaskSpec",
    "NormalizeSpec",
    "PartitionsSpec",
    "PolicySpec",
    "PopulationSpec",
    "PseudonymizeSpec",
    "PseudonymScope",
    "PublicationSpec",
    "RecursiveCL",
    "ReleaseSpec",
    "Role",
    "SourceSpec",
    "TableSpec",
    "ThresholdsSpec",
    "UtilityQuerySpec",
    "build_hierarchy",
    "check_data",
    "discover_specs",
    "iter_problems",
    "load_spec",
    "load_specs",
    "spec_from_dict",
]
