"""The core functions the Dagster layer calls, gathered in one place.

The Dagster layer never computes a privacy figure itself: it calls the core (risk, anonymize,
pseudonymize, release), which knows nothing of Dagster. Importing them through this module
keeps the list of what the orchestration depends on in one screen.
"""

from ..anonymize import NoSolution, anonymize
from ..pseudonymize import open_keystore, pseudonym_pattern, pseudonymize
from ..release import Ledger, check_composition, class_assignment, dataset_hash, linkage_pseudonyms
from ..release.publish import record_evaluation
from ..release.report import build_report, render, report_inputs
from ..risk import measure_risk, utility_query_error

__all__ = [
    "Ledger", "NoSolution", "anonymize", "build_report", "check_composition", "class_assignment",
    "dataset_hash", "linkage_pseudonyms", "measure_risk", "open_keystore", "pseudonym_pattern",
    "pseudonymize", "record_evaluation", "render", "report_inputs", "utility_query_error",
]
