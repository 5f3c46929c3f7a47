"""Training runs that write files: one model into a folder (:mod:`.pipeline`), its exports
(:mod:`.export`) and fingerprint (:mod:`.fingerprint`), resumable sweeps (:mod:`.sweep`) and
reference models (:mod:`.references`).

May import: the trainer's root modules, :mod:`epsstar.training.data`, :mod:`epsstar.audit`,
:mod:`epsstar.statistics`.
"""
