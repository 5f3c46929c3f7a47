"""Configuration files, checked before any work against their declared schemas
(:mod:`epsstar.plumbing.files.schema`: types, ranges, sizes and depth of every field): audit-many
manifests (:mod:`.manifest`) and the release gate's limits file (:mod:`.limits`).

Imports only from the rest of the audit layer below it, the statistics, the plumbing and the
exceptions.
"""
