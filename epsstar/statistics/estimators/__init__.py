"""Epsilon* estimators (Definition 2, eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric
for Machine Learning Models").

Lives here: the methods as small frozen records (:mod:`.methods`), :func:`.estimator.estimate`
and :func:`.estimator.epsilon_star`, the supremum over thresholds (:mod:`.optimizer`,
:mod:`.ratio_terms`), the empirical and cross-fitted estimates, bootstrap intervals, the
δ profile and the trade-off curves.

May import: :mod:`epsstar.statistics.fitting`, :mod:`epsstar.statistics.summaries`,
:mod:`epsstar.statistics.bounds`, the statistics' root modules, numpy and scipy.
"""
