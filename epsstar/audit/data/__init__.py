"""Tables: the records an audit reads.

Lives here: reading CSV, Parquet, NPZ and NPY tables by column name (:mod:`.tables`),
matching a table's columns to a model's inputs (:mod:`.column_match`), the checks of the
data (:mod:`.checks`), partitioned data sets (:mod:`.partitions`), loss files and digests
(:mod:`.files`), the one record of a table being read (:mod:`.reading`), the records
themselves for the premise's classifiers (:mod:`.records`), text records
(:mod:`.text_records`), and the configuration files (:mod:`.configs`: manifests, the
gate's limits).

May import: :mod:`epsstar.audit.model`, :mod:`epsstar.statistics`.
"""
