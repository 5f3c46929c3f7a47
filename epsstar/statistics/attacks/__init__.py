"""Membership tests stronger than the global loss threshold, as per-record scores.

Each attack turns model outputs into one score per record oriented like a loss: the
lower, the more member-like, so that "member if score ≤ τ" is the test and every
estimator of Epsilon* runs on the scores unchanged. :mod:`.lira` is offline LiRA,
:mod:`.rmia` offline RMIA, :mod:`.confidence` the shared input (the log-odds of the
true label's probability), :mod:`.power` the attack's AUC and :mod:`.uninformative` the rule
that scores all equal make no test.
"""
