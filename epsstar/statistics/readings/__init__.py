"""Plain-language readings of ε and conversions between privacy parameters.

Lives here: posterior belief, advantage and TPR bounds, μ-GDP conversions, the Bayes
security of DP-SGD (:mod:`.conversions`), the readings of one audit (:mod:`.readings`) and a
Monte Carlo of the subsampled Gaussian mechanism.

May import: the statistics' root modules, :mod:`epsstar.statistics.estimators`,
:mod:`epsstar.statistics.summaries`, numpy and scipy.
"""
