"""A uniform random sample of mutants, and the mutation score it estimates (docs/mutation.md).

Running every mutant of ``epsstar/statistics/`` takes far more than a day of one core
(each surviving mutant of the estimators runs minutes of tests), so the score of the
modules not run whole is estimated from a simple random sample drawn without
replacement: the share of killed mutants in the sample, with its exact (Clopper–Pearson)
95 % interval. The sample is a function of the list of mutants and the seed alone, so
anyone can draw it again and run the same mutants. Both commands read the output of
``mutmut results --all true`` on standard input::

    mutmut results --all true | python tests/mutation_sample.py sample --size 300 --seed 1
    mutmut results --all true | python tests/mutation_sample.py score --size 300 --seed 1

``sample`` prints the names of the sampled mutants not yet run (to pass to
``mutmut run``); ``score`` prints the verdicts of the sample and the estimated score.
Modules named with ``--exclude`` (run whole, and scored whole) are left out of the
population sampled.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
from collections.abc import Iterable, Sequence

from statsmodels.stats.proportion import proportion_confint

NOT_RUN = "not checked"


def verdicts(lines: Iterable[str]) -> dict[str, str]:
    """Mutant name → mutmut's verdict, from the lines of ``mutmut results --all true``."""
    found: dict[str, str] = {}
    for line in lines:
        name, _, verdict = line.strip().rpartition(": ")
        if name:
            found[name] = verdict
    return found


def draw(names: Iterable[str], size: int, seed: int) -> list[str]:
    """A simple random sample (without replacement) of ``size`` names, fixed by ``seed``."""
    population = sorted(names)
    return sorted(random.Random(seed).sample(population, min(size, len(population))))


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval for a binomial proportion (statsmodels' ``beta`` method)."""
    low, high = proportion_confint(successes, trials, alpha=1.0 - level, method="beta")
    return float(low), float(high)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("sample", "score"))
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--prefix", default="epsstar.statistics.")
    parser.add_argument("--exclude", nargs="*", default=[], metavar="MODULE")
    args = parser.parse_args(argv)
    every = verdicts(sys.stdin)
    excluded = set(args.exclude)
    population = [
        name
        for name in every
        if name.startswith(args.prefix) and name.rsplit(".", 1)[0] not in excluded
    ]
    chosen = draw(population, args.size, args.seed)
    if args.command == "sample":
        for name in chosen:
            if every[name] == NOT_RUN:
                print(name)
        return 0
    counts = collections.Counter(every[name] for name in chosen)
    run = len(chosen) - counts[NOT_RUN]
    killed = counts["killed"]
    print(f"population {len(population)} mutants, sample {len(chosen)} (seed {args.seed})")
    print("verdicts: " + ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items())))
    if run:
        low, high = clopper_pearson(killed, run)
        share = f"{killed / run:.1%} (95 % interval {low:.1%}–{high:.1%})"
        print(f"killed {killed} of {run} run: {share}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
