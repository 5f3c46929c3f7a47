"""Where the records meet the model: one process, or a Dask cluster.

Lives here: streaming a table through a model in batches (:mod:`.streaming`), holding large
sides as summaries (:mod:`.summaries`), the connection to a Dask cluster (:mod:`.dask_engine`)
and one audit's partitions streamed on it (:mod:`.dask_audit`).

May import: every room of the audit layer below it (:mod:`epsstar.audit.attacks`,
:mod:`epsstar.audit.output`, :mod:`epsstar.audit.data`, :mod:`epsstar.audit.model`) and
:mod:`epsstar.statistics`.
"""
