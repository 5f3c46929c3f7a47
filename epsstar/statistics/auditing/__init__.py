"""The statistics of auditing a training procedure that claims (ε, δ)-DP.

A training procedure is audited by inserting canaries, training, and turning what the
canaries reveal into an ε lower bound that a correct trainer exceeds with probability at
most 1 − confidence; a claim ε < ε_lo is refuted (Nasr et al. 2021, "Adversary Instantiation:
Lower Bounds for Differentially Private Machine Learning"; Steinke, Nasr & Jagielski 2023,
"Privacy Auditing with One (1) Training Run").

Lives here: in :mod:`.one_run`, the one-run bounds of Steinke et al.
(:mod:`.one_run.approximate_dp`) and of Mahloujifar, Melis & Chaudhuri 2024
(:mod:`.one_run.gaussian_dp`), the guessing rules (:mod:`.one_run.guesses`,
:mod:`.one_run.guess_rules`), the choice of k from the claim alone
(:mod:`.one_run.choose_k`) and the one-run record (:mod:`.one_run.bounds`); in
:mod:`.many_runs`, the many-run bounds (Clopper–Pearson, μ-GDP, Bayesian, log-Katz;
:mod:`.many_runs.bounds`, :mod:`.many_runs.intervals`); beside them, the μ a claimed (ε, δ)
names (:mod:`.claims`), the DI adversary's readings (:mod:`.identifiability`) and the
smallest audit that could refute a claim (:mod:`.feasibility`).

May import: the statistics' root modules, :mod:`epsstar.statistics.bounds`,
:mod:`epsstar.statistics.readings`, numpy, scipy and statsmodels.
"""
