"""Statistically valid bounds and tests.

Lives here: ε lower bounds from counted errors (Clopper–Pearson, Nasr et al.;
:mod:`.from_counts`), the held-out lower bound and the held-out exact leak test, the
release gate's statistic under each rule, and the premise's and the repeats' tests.

May import: :mod:`epsstar.statistics.summaries`, the root modules below
:mod:`epsstar.statistics.results` (names, argument checks, losses, the transform), numpy,
scipy.
"""
