"""Losses too many to hold: mergeable sketches (:mod:`.loss_sketch`) and a side's summary
(:mod:`.loss_summary`), which the estimators read in place of an array of losses; losses held
in memory (:mod:`.loss_values`); the thresholds where two samples count exactly; and the
size of a tail (:mod:`.tail_size`), which the tail fits and the summaries' exact extremes
share.

May import: the lowest root modules of the statistics (names, argument checks) and numpy.
"""
