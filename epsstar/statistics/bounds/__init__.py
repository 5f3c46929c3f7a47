"""Statistically valid bounds and tests.

Lives here: ε lower bounds from counted errors (Clopper–Pearson, Nasr et al.;
:mod:`.from_counts`), the held-out lower bound and the held-out exact leak test, the
release gate's statistic under each rule, and Epsilon* per slice with simultaneous bounds.

May import: the statistics' root modules, :mod:`epsstar.statistics.summaries`,
:mod:`epsstar.statistics.estimators` (the slices estimate within each group), numpy, scipy.
"""
