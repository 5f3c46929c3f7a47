"""Losses too many to hold: mergeable sketches (:mod:`.loss_sketch`) and a side's summary
(:mod:`.loss_summary`), which the estimators read in place of an array of losses.

May import: the statistics' root modules and numpy.
"""
