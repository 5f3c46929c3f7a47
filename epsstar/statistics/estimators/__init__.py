"""Epsilon* estimators: the methods, the supremum of eq. 7, cross-fitting, the empirical estimate, bootstrap intervals, the δ profile and trade-off curves."""
