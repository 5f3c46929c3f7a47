"""The expected one-run bounds of each guessing rule on a trainer that leaks on part of its
canaries (the table of docs/training-audit.md, "Guessing rules").

The design: m canaries, half of them members; a fraction f of the members is exposed (each
scores above every other canary), the other members score like the excluded canaries. With
k guesses per side, the expected right guesses are: "in" for the top k — the E = f·m/2
exposed first, then draws from the m − E others, (m/2 − E)/(m − E) of them members; "out"
for the bottom k — draws from the m − E others, (m/2)/(m − E) of them excluded. Each count
is rounded to the nearest integer and turned into the bound of Steinke, Nasr & Jagielski
(2023), "Privacy Auditing with One (1) Training Run". ``both`` bounds the three rules at a
third of the error rate each. The oracle guesses the ⌊E⌋ exposed members "in" and nothing
else. The last two columns: the fewest canaries (searched over 400 geometric values from
200 to 200,000) with which k = 0.9·f·m/2 "in" guesses, all right, refute the claim, with k
fixed for f, or with a grid of four k (f = 5, 20, 50, 95 %) split by Bonferroni.

    python benchmarks/guess_rule_arithmetic.py
"""

from __future__ import annotations

import numpy as np

from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound

CANARIES = 700
CLAIM = 4.014
DELTA = 1e-5
CONFIDENCE = 1 - 0.05 / 3
K = 303
SHARES = (0.05, 0.2, 0.5, 0.95)


def bound(guesses: int, correct: float, confidence: float) -> float:
    return one_run_epsilon_lower_bound(
        CANARIES, guesses, round(correct), delta=DELTA, confidence=confidence
    )


def canaries_needed(share: float, grid: int) -> str:
    each = 1 - (1 - CONFIDENCE) / grid
    for m in (int(x) for x in np.geomspace(200, 200_000, 400)):
        k = int(0.9 * share * m / 2)
        if k >= 1 and one_run_epsilon_lower_bound(m, k, k, delta=DELTA, confidence=each) > CLAIM:
            return f"{m:,} (k = {k})"
    return "none"


def row(share: float) -> list[str]:
    exposed = share * CANARIES / 2
    others = CANARIES - exposed
    top = min(K, exposed) + max(0, K - exposed) * (CANARIES / 2 - exposed) / others
    bottom = K * (CANARIES / 2) / others
    guesses = {  # rule: (guesses, expected right guesses)
        "symmetric": (2 * K, top + bottom),
        "members-only": (K, top),
        "nonmembers-only": (K, bottom),
    }
    third = 1 - (1 - CONFIDENCE) / 3
    values = [bound(r, v, CONFIDENCE) for r, v in guesses.values()]
    values.append(max(bound(r, v, third) for r, v in guesses.values()))
    values.append(bound(int(exposed), int(exposed), CONFIDENCE))
    needed = [canaries_needed(share, 1), canaries_needed(share, 4)]
    return [f"{share:.0%}", str(int(exposed)), *(f"{v:.3f}" for v in values), *needed]


def main() -> None:
    header = ["leaking on", "exposed", "symmetric", "members-only", "nonmembers-only", "both"]
    header += ["oracle", "m needed, k fixed for f", "m needed, 4 pre-registered k"]
    print(f"m = {CANARIES}, k = {K}, claim {CLAIM}, delta = {DELTA:g}, confidence {CONFIDENCE:.4f}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for share in SHARES:
        print("| " + " | ".join(row(share)) + " |")


if __name__ == "__main__":
    main()
