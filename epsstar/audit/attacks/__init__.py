"""Membership tests, each audited as the loss attack is.

Lives here: the statistics of one test's scores (:mod:`.from_losses`), the attacks and their
settings (:mod:`.scoring`), the reference models' records (:mod:`.references`), the release
gate over several attacks (:mod:`.gate`), the attacks of one audit (:mod:`.run`) and
Epsilon* per slice of the records (:mod:`.slices`).

May import: :mod:`epsstar.audit.output`, :mod:`epsstar.audit.data`,
:mod:`epsstar.audit.model`, :mod:`epsstar.statistics`.
"""
