"""One module per membership attack beyond the loss attack: its scorer
(:data:`epsstar.audit.attacks.attack.Scorer`), registered in :mod:`epsstar.audit.attacks.registry`.

May import: :mod:`epsstar.audit.attacks.attack` and :mod:`epsstar.audit.attacks.inputs`,
and :mod:`epsstar.statistics`.
"""
