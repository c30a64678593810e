"""Population uniqueness estimated from a sample's equivalence-class sizes.

The models are in :mod:`anon_dagster.risk.uniqueness`, one module each (their definitions,
sources and intervals are in its docstring); this module keeps the import path
``anon_dagster.risk.population`` and the names it has always offered.
"""

from .uniqueness import (
    DANKAR_THRESHOLD,
    MODELS,
    PopulationUniqueness,
    UniquenessEstimate,
    frequencies_of_frequencies,
    pitman_gradient,
    pitman_hessian,
    pitman_log_likelihood,
    population_uniqueness,
    shlosser_classes,
    snb_expected_c1_c2,
    snb_log_expected_c1_c2,
)

# The estimators' building blocks, by the names tests and benchmarks reach them with.
from .uniqueness.common import _count_of_size as _count_of_size
from .uniqueness.common import _finish as _finish
from .uniqueness.common import _percent as _percent
from .uniqueness.pitman import _Z95 as _Z95
from .uniqueness.pitman import _interior as _interior
from .uniqueness.pitman import _pitman_estimate as _pitman_estimate
from .uniqueness.pitman import _pitman_fit as _pitman_fit
from .uniqueness.pitman import _pitman_loglik_parts as _pitman_loglik_parts
from .uniqueness.pitman import _pitman_newton as _pitman_newton
from .uniqueness.pitman import _pitman_uniques as _pitman_uniques
from .uniqueness.poisson import _GARWOOD_HIGH_1 as _GARWOOD_HIGH_1
from .uniqueness.poisson import _GARWOOD_LOW_1 as _GARWOOD_LOW_1
from .uniqueness.poisson import _poisson_probability as _poisson_probability
from .uniqueness.poisson_gamma import _poisson_gamma_parameters as _poisson_gamma_parameters
from .uniqueness.poisson_gamma import _poisson_gamma_uniques as _poisson_gamma_uniques
from .uniqueness.poisson_gamma import _poisson_gamma_uniques_batch as _poisson_gamma_uniques_batch
from .uniqueness.snb import _shlosser_classes_batch as _shlosser_classes_batch
from .uniqueness.snb import _snb_estimate as _snb_estimate
from .uniqueness.snb import _snb_fit as _snb_fit
from .uniqueness.snb import _snb_residuals as _snb_residuals
from .uniqueness.snb import _snb_uniques as _snb_uniques
from .uniqueness.snb import _snb_uniques_batch as _snb_uniques_batch
from .uniqueness.zayatz import _log_hypergeom_one as _log_hypergeom_one
from .uniqueness.zayatz import _zayatz_uniques_batch as _zayatz_uniques_batch

__all__ = [
    "DANKAR_THRESHOLD", "MODELS", "PopulationUniqueness", "UniquenessEstimate",
    "frequencies_of_frequencies", "pitman_gradient", "pitman_hessian", "pitman_log_likelihood",
    "population_uniqueness", "shlosser_classes", "snb_expected_c1_c2", "snb_log_expected_c1_c2",
]
