"""Population uniqueness estimated from a sample's equivalence-class sizes.

A record of a sample is *population-unique* when no other person in the population shares its
quasi-identifier values. A journalist who links the published sample to a register of the whole
population singles out exactly these records. Only the sample is published, so the share has to
be estimated from the sample's class sizes and the sampling fraction ``f`` (sample size divided
by population size, population size ``N = n / f``).

Every estimator here works on the *frequencies of frequencies* of the sample: ``c_s``, the
number of equivalence classes of size ``s`` (``np.bincount`` of the class sizes), so the cost
is linear in the number of classes and the result does not depend on the order of the classes.

Reported quantity. For each model, ``fraction`` is the estimated share of the sample's records
that are unique in the population. Under Bernoulli sampling, each of the ``U`` population
uniques is in the sample with probability ``f``, so the expected number of population-unique
sample records is ``f U`` and their share is ``f U / n = U / N``: the same number as the share
of the *population* that is unique, which is what ARX reports. ``sample_count`` is ``f U`` and
``population_count`` is ``U``.

Models (``model`` names in the result):

- ``naive``: every sample unique is taken as population-unique: ``c_1 / n``. A population
  unique that was sampled is always a sample unique, so this is an upper bound; it overstates
  strongly at small ``f``.
- ``poisson``: a class of the population has size ``F_j ~ Poisson(lambda_j)``, sampled
  records ``n_j ~ Poisson(f lambda_j)`` and unsampled ones ``F_j - n_j ~ Poisson((1-f)
  lambda_j)``, independently. With the plug-in ``lambda_j = n_j / f``, a sample unique is
  population-unique with probability ``exp(-(1 - f) / f)``.
- ``poisson_gamma``: the same with ``lambda_j ~ Gamma(alpha, scale beta)`` (so ``n_j`` is
  negative binomial). Given ``n_j``, ``lambda_j ~ Gamma(alpha + n_j, rate 1/beta + f)`` and
  ``P[no one else in the population] = ((1/beta + f) / (1/beta + 1)) ** (alpha + n_j)``.
  ``alpha`` and ``beta`` are fitted by moments on the observed class sizes (mean ``m``,
  variance ``v``): ``f beta = v/m - 1``, ``alpha = m**2 / (v - m)`` (Bethlehem, Keller and
  Pannekoek 1990; Skinner and Holmes 1998). It understates at small ``f`` on heavy-tailed
  populations.
- ``zayatz``: Zayatz (1991), as ARX's ``ModelZayatz`` computes it: the sample's class-size
  distribution stands in for the population's and ``P[population unique | sample unique] =
  (c_1/u) H(1; N, 1, n) / sum_s (c_s/u) H(1; N, s, n)`` with ``H(1; N, s, n)`` the
  hypergeometric probability of drawing exactly one member of a class of size ``s`` in ``n``
  draws from ``N``; ``U = c_1 P / f``.
- ``pitman``: Hoshino (2001), as ARX's ``ModelPitman``: the class partition follows the
  Pitman sampling formula with parameters ``theta > -alpha``, ``0 < alpha < 1``, fitted by
  maximum likelihood on the frequencies of frequencies; ``U = Gamma(theta + 1) /
  Gamma(theta + alpha) * N ** alpha``.
- ``snb``: slide negative binomial, Chen and Keller-McNulty (1998), as ARX's ``ModelSNB``:
  the ``K`` non-empty population classes have sizes ``1 + NB(alpha, beta)``; ``K`` is
  estimated with Haas and Stokes' Shlosser-type estimator, ``alpha`` and ``beta`` solve
  ``E[c_1] = c_1`` and ``E[c_2] = c_2`` under binomial thinning; ``U = K beta ** alpha``.
- ``dankar``: the decision rule of Dankar, El Emam, Neisa and Roffey (2012) as ARX's
  ``RiskModelPopulationUniqueness`` applies it: ``f <= 0.1``: Pitman (Zayatz when Pitman has
  no valid estimate); otherwise the smaller of Zayatz and SNB (Zayatz when SNB has none).

Two places where the ARX source (``ModelSNB.java``) and the published formulas differ, and
this package follows the formulas: the second moment equation of SNB divides by
``(1 - d) ** (alpha + 2)`` (ARX's objective multiplies, while its Jacobian divides), and the
second denominator of the Shlosser-type estimator of ``K`` is ``sum_s (1-f)**s ((1+f)**s -
1) c_s`` (ARX subtracts 1 once per distinct size instead of inside the sum).

Intervals (``interval`` is on ``fraction``; ``interval_method`` says how it was obtained):

- ``poisson``: exact (Garwood) 95 % interval for the Poisson mean given one sampled record,
  carried through ``exp(-(1 - f) lambda)``.
- ``pitman``: 95 % Wald interval from the observed Fisher information of the likelihood at
  the estimate, by the delta method (clipped to ``[0, 1]``).
- ``poisson_gamma``, ``zayatz``, ``snb``: 2.5 and 97.5 percentiles of the estimate over a
  class bootstrap: the sample's equivalence classes are drawn with replacement (a multinomial
  draw of the frequencies of frequencies; seeded, so the figures are reproducible). It reflects
  the sampling variability of the class-size distribution, not model misspecification, and may
  exclude the point estimate when the estimator is biased.
- ``naive``: none (it is an observed figure and an upper bound).
- ``dankar``: the interval of the model it chose.

Degenerate inputs, with the documented results:

- ``f = 1``: the sample is the population; every model returns the exact value ``c_1 / n``
  with the interval ``(c_1/n, c_1/n)``.
- no class of size 1: nobody in the sample is population-unique; every model returns 0 (as
  ARX does).
- every class of size 1 (``c_1 = u``): the sample carries no information on how often values
  repeat; Pitman and SNB are not identifiable (``fraction`` is ``None``), Poisson-Gamma has no
  overdispersion and falls back to Poisson, Zayatz gives 1, so Dankar's rule gives Zayatz's 1.
- ``f`` outside ``(0, 1]``, or class sizes that are negative or not integers: ``DataError``.
- an empty sample: ``DataError`` (the share is undefined).

Modules: :mod:`.common` (the frequencies of frequencies, the result types, the class bootstrap
and the summary), one module per model (:mod:`.naive`, :mod:`.poisson`, :mod:`.poisson_gamma`,
:mod:`.zayatz`, :mod:`.pitman`, :mod:`.snb`), :mod:`.dankar` (the decision rule) and
:mod:`.estimate` (:func:`population_uniqueness`, every model on one sample).
"""

from .common import MODELS, PopulationUniqueness, UniquenessEstimate, frequencies_of_frequencies
from .dankar import DANKAR_THRESHOLD
from .estimate import population_uniqueness
from .pitman import pitman_gradient, pitman_hessian, pitman_log_likelihood
from .snb import shlosser_classes, snb_expected_c1_c2, snb_log_expected_c1_c2

__all__ = [
    "DANKAR_THRESHOLD", "MODELS", "PopulationUniqueness", "UniquenessEstimate",
    "frequencies_of_frequencies", "pitman_gradient", "pitman_hessian", "pitman_log_likelihood",
    "population_uniqueness", "shlosser_classes", "snb_expected_c1_c2", "snb_log_expected_c1_c2",
]
