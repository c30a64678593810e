"""Release: the publication ledger, composition checks, DP aggregates and the risk report.

Plain Python (no Dagster imports): the Dagster layer and the CLI call these functions.
See docs/release.md for how they fit together.
"""

from .composition import CompositionResult, check_composition, class_assignment
from .dp import (
    AggregatesConfig,
    DPAggregates,
    aggregates_config,
    budget_population,
    discrete_laplace,
    dp_aggregates,
    epsilon_spend,
)
from .ledger import (
    BudgetExceeded,
    ClassAssignmentRows,
    Ledger,
    LedgerError,
    Publication,
    compose_epsilons,
    dataset_hash,
    default_ledger_path,
    linkage_pseudonyms,
)
from .publish import (
    compose,
    dp_release,
    find_entry,
    rebuild_report,
    record_evaluation,
    spec_assignment,
)
from .report import build_report, render, render_html, render_json, render_markdown, report_inputs

__all__ = [
    "build_report",
    "compose",
    "dp_release",
    "find_entry",
    "rebuild_report",
    "record_evaluation",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
    "report_inputs",
    "spec_assignment",
    "AggregatesConfig",
    "DPAggregates",
    "aggregates_config",
    "budget_population",
    "discrete_laplace",
    "dp_aggregates",
    "epsilon_spend",
    "BudgetExceeded",
    "ClassAssignmentRows",
    "CompositionResult",
    "Ledger",
    "LedgerError",
    "Publication",
    "check_composition",
    "class_assignment",
    "compose_epsilons",
    "dataset_hash",
    "default_ledger_path",
    "linkage_pseudonyms",
]
