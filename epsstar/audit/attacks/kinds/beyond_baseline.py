"""The model's leak beyond the blind baseline: the loss corrected by what the records alone
say about membership.

The blind classifier (:mod:`epsstar.audit.premise.classifier`) gives each record
``b(x) = log P(train | x) / P(population | x)`` (less the prior), without the model. The
membership evidence the model adds is the log-likelihood ratio of its loss *given the
record*, ``log P(member | x, loss) / P(member | x)``, which is 0 for every record when the
model has memorised nothing, however much the tables differ. It is estimated by a logistic
regression of membership on ``(loss, b(x))`` (scikit-learn), cross-fitted over two random
halves of the rows like the blind classifier: ``logit P(member | x, loss) ≈ α + β·loss +
γ·b(x)``, so the evidence beyond the records is ``α + β·loss + (γ - 1)·b(x)`` less the prior
log-odds. The score, oriented like a loss, is its negative.
"""

from __future__ import annotations

import numpy as np

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs

__all__ = ["beyond_baseline_scores"]


def beyond_baseline_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """Minus the estimated log-likelihood ratio of the loss given the record."""
    from sklearn.linear_model import LogisticRegression

    name = "beyond-baseline"
    loss_train, loss_population = inputs.audit_losses(name)
    blind_train, blind_population = inputs.blind_log_odds(name)
    loss = np.concatenate([loss_train, loss_population])
    blind = np.concatenate([blind_train, blind_population])
    member = np.arange(loss.size) < loss_train.size
    x = np.column_stack([loss, blind])
    rng = np.random.default_rng([seed, 0xBEE])
    half = np.concatenate(
        [rng.permutation(np.arange(n) % 2) for n in (loss_train.size, loss_population.size)]
    )
    scores = np.empty(loss.size)
    coefficients = []
    for k in (0, 1):
        fit = half != k
        model = LogisticRegression(C=1e6, max_iter=1000).fit(x[fit], member[fit])
        prior = np.log(member[fit].mean() / (1 - member[fit].mean()))
        evidence = model.decision_function(x[half == k]) - blind[half == k] - prior
        scores[half == k] = -evidence
        coefficients.append([float(model.coef_[0, 0]), float(model.coef_[0, 1])])
    settings = {
        "score": "-(logit P(member | x, loss) - logit P(member | x)), logistic regression of "
        "membership on (loss, blind log-odds), cross-fitted over two halves",
        "coefficients": {
            "loss": [c[0] for c in coefficients],
            "blind_log_odds": [c[1] for c in coefficients],
        },
    }
    return Scores(scores[: loss_train.size], scores[loss_train.size :], settings)
