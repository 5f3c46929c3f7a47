"""The white-box adversaries of an audit, fed by every step of the training they watch.

The ``observe`` hook of :class:`~epsstar.training.trainer.StepHooks` hands over, at step t, the
parameters θ_t and the noisy sum g̃_t = Σ clip(∇) + N(0, σ²C²I). The adversary knows what the
DP-SGD analysis lets it know: the data every run shares (``--train``), every canary (not which
ones the run includes), the initial parameters θ_0, the mechanism (q, C, σ, the optimiser) —
and the standardiser of the exported model, which the trainer fits on the audit's population
(on the run's table under ``--standardise-on data``). The part
of g̃_t that it expects from the data and the canaries, without knowing the run's batch or
which canaries are in,

    E_t = q·[Σ_{x ∈ train} clip(∇ℓ(θ_t; x)) + ½ Σ_{canary records c} clip(∇ℓ(θ_t; c))]
          + ½ q C Σ_j e_{c_j},

is subtracted; what is left is the noise, the batch's departure from its expectation, and the
canaries the run includes. Three scores follow (§III-IV of Nasr et al. 2021, "Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning"; Algorithm 1 of
Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
deep learning"):

* ``every-step``: gradient canary j scores Σ_t log(1 − q + q·exp((C·u_t − ½C²)/V_t[c_j])),
  u_t = (g̃_t − E_t)[c_j] + ½qC, the log-likelihood ratio of "in" against "out" when step t's
  residual on that coordinate is Gaussian with variance V_t[c_j] = ŝ_t² + v_t[c_j]: the noise
  variance ŝ_t² read off the step itself (not taken from the mechanism it was told, or a
  trainer that skips its noise on some steps would go unseen) plus the variance the Poisson
  batch adds on that coordinate, from the data's and the canary records' clipped gradients
  (:mod:`.every_step`, which says why the bounds stay valid: no inclusion bit is read);
* ``di``: population canary i, whose clipped gradient at θ_t is G_i (its local sensitivity
  ‖G_i‖ ≤ C), adds to its log posterior odds (Lemma 1, uniform prior) the log-likelihood ratio
  of the step under "in" against "out". The adversary reads the step along G_i:
  u = ⟨g̃_t − (E_t − ½ q G_i), G_i⟩/‖G_i‖ is N(0, s²) without the canary and, in a step that
  samples it (probability q), N(‖G_i‖, s²) with it, where s² = σ²C² plus the variance the
  Poisson batch adds along G_i, q(1 − q)·Σ_x ⟨clip(∇ℓ(θ_t; x)), G_i/‖G_i‖⟩² over the data
  (estimated on a fixed sample of at most :data:`VARIANCE_SAMPLE` records) and the same with
  q/2 for the canaries; so the step adds log(1 − q + q·exp((u‖G_i‖ − ½‖G_i‖²)/s²)). With
  q = 1 (full batches, the paper's setting) this is the paper's Gaussian update. The beliefs
  are the adversary's model of the run (it treats the batch's departure as Gaussian), not an
  exact posterior; any score keeps the audit's bounds valid;
* ``gradient`` (final weights only): the adversary runs the training it expects from θ_0,
  θ^ref_{t+1} = SGD step of θ^ref_t with the update E_t(θ^ref_t)/normaliser, and canary j
  scores (θ^ref_T − θ_T)[c_j] / C: the final weights' distance along the canary's direction
  below the path expected without it. Without this path the data's own drift along each
  coordinate would hide the canaries (``docs/training-audit.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from epsstar.audit.training_audit.threats.di import THREAT_MODEL as DI
from epsstar.audit.training_audit.threats.every_step import THREAT_MODEL as EVERY_STEP
from epsstar.audit.training_audit.threats.gradient import THREAT_MODEL as GRADIENT
from epsstar.statistics._validation import FloatArray
from epsstar.training.clipping import (
    clip_rows,
    clipped_gradient_sum,
    clipped_square_sum,
    loss_sum,
)
from epsstar.training.models import MLP
from epsstar.training.threat_models.every_step import noise_variance, step_log_likelihood_ratio

__all__ = ["VARIANCE_SAMPLE", "Mechanism", "Observed", "WhiteBoxObserver"]

#: Records of the data on which the DI adversary estimates the batch's variance at each step.
VARIANCE_SAMPLE = 1024


@dataclass(frozen=True, slots=True)
class Mechanism:
    """What the adversary knows of the trainer: sampling rate, clip, the noise's standard
    deviation σC it assumes, the update's normaliser, the optimiser's settings."""

    sampling_rate: float
    clip: float
    noise_std: float
    normaliser: float
    lr: float
    momentum: float
    binary: bool


@dataclass(frozen=True, slots=True)
class Observed:
    """The records the adversary computes gradients on, standardised as the trainer does."""

    train: tuple[torch.Tensor, torch.Tensor]
    canaries: tuple[torch.Tensor, torch.Tensor]
    population: tuple[torch.Tensor, torch.Tensor] | None
    coordinates: torch.Tensor
    sample: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def _load(network: MLP, flat: torch.Tensor) -> None:
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(flat, network.parameters())


@dataclass
class WhiteBoxObserver:
    """The ``observe`` hook; :meth:`scores` gives the three scores of the module."""

    network: MLP
    mechanism: Mechanism
    observed: Observed
    _every_step: torch.Tensor = field(init=False)
    _log_odds: torch.Tensor | None = field(init=False)
    _reference: MLP | None = field(init=False)
    _optimiser: torch.optim.Optimizer | None = field(init=False)

    def __post_init__(self) -> None:
        self._every_step = torch.zeros(self.observed.coordinates.numel(), dtype=torch.float64)
        population = self.observed.population
        self._log_odds = (
            None if population is None else torch.zeros(population[0].shape[0], dtype=torch.float64)
        )
        self._reference = None
        self._optimiser = None

    def _expected(self, at: MLP) -> torch.Tensor:
        """E_t of the module at ``at``'s parameters (flattened)."""
        m = self.mechanism
        x, y = self.observed.train
        total = _flat(clipped_gradient_sum(at, x, y, m.binary, m.clip).gradients)
        cx, cy = self.observed.canaries
        if cx.shape[0]:
            total = total + 0.5 * _flat(
                clipped_gradient_sum(at, cx, cy, m.binary, m.clip).gradients
            )
        expected = m.sampling_rate * total.detach()
        if self.observed.coordinates.numel():
            expected[self.observed.coordinates] += 0.5 * m.sampling_rate * m.clip
        return expected

    def _per_example(self, at: MLP, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Every record's clipped gradient at ``at``'s parameters, as rows."""
        names = [name for name, _ in at.named_parameters()]
        weights = {name: p.detach() for name, p in at.named_parameters()}
        binary = self.mechanism.binary

        def one(w: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
            return loss_sum(functional_call(at, w, (xi.unsqueeze(0),)), yi.unsqueeze(0), binary)

        rows = vmap(grad(one), in_dims=(None, 0, 0))(weights, x, y)
        flat = torch.cat([rows[name].reshape(x.shape[0], -1) for name in names], dim=1)
        return clip_rows(flat.detach(), self.mechanism.clip)

    def _spread(self, directions: torch.Tensor) -> torch.Tensor:
        """The variance the Poisson batch adds along each unit row of ``directions``."""
        m = self.mechanism
        q = m.sampling_rate
        x, y = self.observed.train
        rows = self.observed.sample
        scale = x.shape[0] / max(1, rows.numel())
        data = self._per_example(self.network, x[rows], y[rows]).double() @ directions.T
        variance = scale * q * (1.0 - q) * (data * data).sum(dim=0)
        cx, cy = self.observed.canaries
        half = q / 2.0
        if cx.shape[0]:
            canary = self._per_example(self.network, cx, cy).double() @ directions.T
            variance += half * (1.0 - half) * (canary * canary).sum(dim=0)
        coordinates = self.observed.coordinates
        if coordinates.numel():
            along = directions[:, coordinates] * m.clip
            variance += half * (1.0 - half) * (along * along).sum(dim=1)
        return variance

    def _coordinate_spread(self) -> torch.Tensor:
        """v_t of :mod:`.every_step` on every coordinate: the variance the Poisson batch adds,
        from the data's clipped gradients and every canary record's at its prior rate q/2."""
        m = self.mechanism
        q = m.sampling_rate
        x, y = self.observed.train
        variance = q * (1.0 - q) * _flat(clipped_square_sum(self.network, x, y, m.binary, m.clip))
        cx, cy = self.observed.canaries
        if cx.shape[0]:
            canary = _flat(clipped_square_sum(self.network, cx, cy, m.binary, m.clip))
            variance = variance + (q / 2.0) * (1.0 - q / 2.0) * canary
        return variance.detach().double()

    def _di_step(self, residual: torch.Tensor) -> None:
        population, log_odds = self.observed.population, self._log_odds
        if population is None or log_odds is None:
            return
        m = self.mechanism
        gradients = self._per_example(self.network, *population).double()
        norms = gradients.norm(dim=1).clamp_min(1e-12)
        directions = gradients / norms.unsqueeze(1)
        along = directions @ residual.double() + 0.5 * m.sampling_rate * norms
        variance = m.noise_std**2 + self._spread(directions)
        z = (along * norms - 0.5 * norms * norms) / variance
        q = torch.tensor(m.sampling_rate, dtype=torch.float64)
        log_odds += torch.logaddexp(torch.log1p(-q), torch.log(q) + z)

    def _reference_step(self, start: torch.Tensor) -> None:
        if self._reference is None:
            self._reference = MLP(
                self.network.linears[0].in_features,
                self.network.linears[-1].out_features,
                [layer.out_features for layer in self.network.linears[:-1]],
            )
            _load(self._reference, start)
            m = self.mechanism
            self._optimiser = torch.optim.SGD(
                self._reference.parameters(), lr=m.lr, momentum=m.momentum
            )
        assert self._optimiser is not None
        update = self._expected(self._reference) / self.mechanism.normaliser
        pieces = torch.split(update, [p.numel() for p in self._reference.parameters()])
        for param, piece in zip(self._reference.parameters(), pieces, strict=True):
            param.grad = piece.reshape(param.shape).to(param.dtype)
        self._optimiser.step()

    def __call__(
        self, step: int, params: list[torch.Tensor], noisy_sum: list[torch.Tensor]
    ) -> None:
        theta = _flat(params)
        if step == 0:
            self._start = theta.clone()
        _load(self.network, theta)
        residual = _flat(noisy_sum).detach() - self._expected(self.network)
        coordinates = self.observed.coordinates
        if coordinates.numel():
            m = self.mechanism
            spread = self._coordinate_spread()
            noise = noise_variance(residual, spread, coordinates, m.sampling_rate, m.clip)
            self._every_step += step_log_likelihood_ratio(
                residual[coordinates], noise + spread[coordinates], m.sampling_rate, m.clip
            )
            self._reference_step(self._start)
        if self._log_odds is not None and self.mechanism.noise_std > 0.0:
            self._di_step(residual)

    def scores(self, final: MLP) -> dict[str, FloatArray]:
        """The scores after the last step: ``every-step``, ``gradient``, ``di`` (those fed)."""
        found: dict[str, FloatArray] = {}
        coordinates = self.observed.coordinates
        if coordinates.numel() and self._reference is not None:
            found[EVERY_STEP.name] = self._every_step.numpy().astype(np.float64)
            distance = _flat(list(self._reference.parameters())) - _flat(list(final.parameters()))
            found[GRADIENT.name] = (
                distance.detach()[coordinates].double() / self.mechanism.clip
            ).numpy()
        if self._log_odds is not None:
            found[DI.name] = self._log_odds.numpy().astype(np.float64)
        return found
