"""Data for the trainer: feature tables with a label column (:mod:`.tables`), and the shipped
UCI Adult and generated data sets (:mod:`.datasets`).

May import: :mod:`epsstar.audit`, :mod:`epsstar.statistics`; not the rest of the trainer.
"""
