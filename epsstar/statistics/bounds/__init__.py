"""Statistically valid bounds and tests: ε lower bounds from counts, the held-out bound and leak test, the release gate's statistic, per-slice estimates."""
