"""Bayes security of the demo's DP-SGD strategies: PLD against Monte Carlo and the closed form.

For each DP strategy of ``epsstar demo`` (UCI Adult, expected batch 64, 5 epochs,
σ chosen by the trainer's search for ε ∈ {1, 3, 10}) this prints, for the
add/remove and the substitution relation:

* ``PLD``: β = 1 − δ(0) of the pessimistic privacy loss distribution, as
  ``training.json`` records it (``beta_exact``), and its grid step;
* ``finer``: the same with a grid 4× finer, to show the discretisation error;
* ``Monte Carlo``: 1 − E_P[(1 − dQ/dP)₊], sampling the T-step outputs directly
  (mean ± standard error; independent of dp_accounting);
* ``closed form``: the leading term of Corollary 7 of
  Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference"
  (``beta_closed_form``).

It also times what recording the Bayes security adds to a run: the
``bayes_security`` block after the last epoch's ε, as the trainer computes it.
A second table compares the closed form with the PLD (finer grid) over σ at the
demo's sampling rate, for 5 and 20 epochs.

Run:  PYTHONPATH=. python benchmarks/bayes_security.py  [--samples 20000]
"""

from __future__ import annotations

import argparse
import time

from epsstar.cli.commands.demo import strategies
from epsstar.statistics.readings.conversions import bayes_security_dpsgd
from epsstar.statistics.readings.subsampled_gaussian import advantage_monte_carlo
from epsstar.training.accounting import membership_advantage
from epsstar.training.data import datasets
from epsstar.training.trainer import _bayes_security, plan_privacy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000, help="Monte Carlo samples")
    args = parser.parse_args()
    n = datasets.adult().n_train
    print(f"UCI Adult, n = {n}; Monte Carlo with {args.samples} samples\n")
    print(
        "| strategy | σ | relation | PLD β (grid) | finer grid | Monte Carlo | closed form "
        "| seconds added |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for strategy in strategies(quick=False):
        if not strategy.config.private:
            continue
        plan = plan_privacy(strategy.config, n)
        assert plan is not None
        plan.epsilon_after(plan.steps)  # the trainer's last ε, which builds the PLD
        start = time.perf_counter()
        recorded = _bayes_security(plan)
        added = time.perf_counter() - start
        q, steps, sigma = plan.sampling_rate, plan.steps, plan.accounting_noise_multiplier
        for relation, reading in recorded.items():
            interval = reading["value_discretization_interval"]
            assert isinstance(interval, float)
            finer = membership_advantage(
                sigma, q, steps, relation, coarsest_interval=interval / 4
            ).advantage
            advantage, error = advantage_monte_carlo(q, sigma, steps, relation, args.samples)
            beta_mc = 1.0 - advantage
            closed = bayes_security_dpsgd(q, steps, sigma, relation).beta_closed_form
            print(
                f"| {strategy.label} | {sigma:.4f} | {relation} | {reading['beta_exact']:.4f} "
                f"({interval:.2g}) | {1 - finer:.4f} | {beta_mc:.3f} ± {error:.3f} "
                f"| {closed:.4f} | {added:.2f} |"
            )

    print("\n| epochs | σ | relation | PLD β (finer grid) | closed form | closed form − PLD |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    q = 64 / n
    for epochs in (5, 20):
        steps = round(1 / q) * epochs
        for sigma in (0.5, 1.0, 1.5, 2.0, 3.0, 5.0):
            for relation in ("add_remove", "substitution"):
                default = membership_advantage(sigma, q, steps, relation)
                step = default.value_discretization_interval
                advantage = membership_advantage(
                    sigma, q, steps, relation, coarsest_interval=step / 4
                ).advantage
                closed = bayes_security_dpsgd(q, steps, sigma, relation).beta_closed_form
                print(
                    f"| {epochs} | {sigma:g} | {relation} | {1 - advantage:.4f} | {closed:.4f} "
                    f"| {closed - (1 - advantage):+.4f} |"
                )


if __name__ == "__main__":
    main()
