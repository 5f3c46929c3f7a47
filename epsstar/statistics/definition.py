"""The one definition of Epsilon* that the help, README, reports, docs and JSON Schemas share.

Epsilon* is the quantity of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning
Models": the supremum over loss thresholds of the (ε, δ) ratios of one model's membership test.
From finite samples it is estimated, not bounded; the bound is the held-out Clopper–Pearson one
(eq. 5 of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
Machine Learning"). ``tests/test_definition.py`` checks that every place that says what Epsilon*
is uses these words, and none of the older phrases.
"""

from __future__ import annotations

#: What Epsilon* is, completing "Epsilon* is ...".
EPSILON_STAR = (
    "an estimate of the smallest ε for which the model's loss-threshold membership test is "
    "consistent with (ε, δ)-differential privacy"
)
#: What it is not, and what is.
NOT_A_BOUND = (
    "It is an estimate, not a bound: the statistically valid bound is the held-out lower "
    "bound reported beside it."
)
#: The two together, as one sentence pair.
DEFINITION = f"Epsilon* is {EPSILON_STAR}. {NOT_A_BOUND}"
#: Phrases that said otherwise and must not come back.
RETIRED = (
    "empirical lower bound on",
    "estimate, not a guarantee",
    "lower bound on its (epsilon, delta)",
)
