"""Anonymization: global recoding with optimal lattice search, Mondrian, local suppression,
MDAV microaggregation and PRAM, driven by the release spec (see docs/anonymization.md).

The pipeline's entry point is :func:`anonymize` (one partition's pseudonymized table in, the
published rows and a :class:`TransformationRecord` out, stored as JSON). The pieces are usable on their own:
:func:`apply_levels` (global recoding at a level vector), :class:`Lattice` (optimal search),
:func:`mondrian`, :func:`local_suppression`, :func:`mdav`, :func:`apply_pram`.
"""

from .core import AnonymizationResult, NoSolution, anonymize
from .criteria import Policy
from .global_recoding import apply_levels
from .lattice import Lattice, LatticeTooLarge, SearchResult
from .local_suppression import local_suppression
from .microaggregation import mdav
from .mondrian import MondrianNoSolution, mondrian
from .pram import PramSpec, apply_pram, parse_pram
from .record import RECORD_FORMAT, TransformationRecord, table_hash

__all__ = [
    "RECORD_FORMAT", "AnonymizationResult", "Lattice", "LatticeTooLarge", "MondrianNoSolution", "NoSolution",
    "Policy", "PramSpec", "SearchResult", "TransformationRecord", "anonymize", "apply_levels", "apply_pram",
    "local_suppression", "mdav", "mondrian", "parse_pram", "table_hash",
]
