"""Epsilon* estimators (Definition 2, eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric
for Machine Learning Models").

Lives here: the methods as small frozen records (:mod:`.methods`), :func:`.estimator.estimate`
and :func:`.estimator.epsilon_star`, the supremum over thresholds (:mod:`.optimizer`,
:mod:`.ratio_terms`), the empirical estimate (of arrays or of sketches) and the
cross-fitted one, bootstrap intervals, the δ profile, the trade-off curves, and Epsilon* per
slice with simultaneous bounds (:mod:`.slices`).

May import: :mod:`epsstar.statistics.results`, :mod:`epsstar.statistics.fitting`,
:mod:`epsstar.statistics.bounds`, :mod:`epsstar.statistics.summaries`, the root modules below
them, numpy and scipy.
"""
