"""LossTransform parameters carried through construction and JSON."""

from __future__ import annotations

import warnings

import numpy as np

from epsstar.statistics.transform import LossTransform


def test_from_losses_keeps_a_non_default_alpha() -> None:
    transform = LossTransform.from_losses(np.array([1.0, 3.0]), np.array([0.5, 2.0]), alpha=0.25)
    assert (transform.loss_min, transform.loss_max, transform.alpha) == (0.5, 3.0, 0.25)


def test_to_dict_names_every_parameter() -> None:
    transform = LossTransform(loss_min=0.5, loss_max=3.0, alpha=0.25)
    assert transform.to_dict() == {"loss_min": 0.5, "loss_max": 3.0, "alpha": 0.25}


def test_forward_at_the_pole_is_infinite_and_silent() -> None:
    # shifted = (l − min)/scale + α = 0 at l = min − α·scale: log(1 − e^0) = −inf, phi = +inf
    transform = LossTransform(loss_min=0.0, loss_max=2.0, alpha=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        phi = transform.forward(np.array([-1.0, 0.0]))
    assert phi[0] == np.inf
    x = 0.5  # closed form at the smallest loss: −x − log(1 − e^{−x})
    # 1e-12 relative: one expm1 and one log against the closed form
    assert np.isclose(phi[1], -x - np.log(1 - np.exp(-x)), rtol=1e-12, atol=0)
