"""Configuration files, checked before any work: the declared-schema validator
(:mod:`.schema`: types, ranges, sizes and depth of every field), audit-many manifests
(:mod:`.manifest`) and the release gate's limits file (:mod:`.limits`).

Imports only from the rest of :mod:`epsstar.audit.data`, the statistics and the exceptions.
"""
