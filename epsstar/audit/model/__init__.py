"""Models, the lowest room of the audit layer.

Lives here: the loader plugins' discovery and protocol (:mod:`.plugins`) and their contract
suite (:mod:`.contract`), the typed feature columns a model receives (:mod:`.features`), and
what a model file records: class labels and feature names (:mod:`.class_labels`), a
declared DP guarantee (:mod:`.declared_privacy`), how its outputs are read
(:mod:`.output_reading`), and the check of a loader against the model's own predictions
(:mod:`.own_predictions`). Where and on how many threads a model runs is the plumbing's
(:mod:`epsstar.plumbing.runtime.device`, :mod:`epsstar.plumbing.runtime.threads`).

May import: :mod:`epsstar.audit.inputs`, :mod:`epsstar.statistics`, :mod:`epsstar.plumbing`,
:mod:`epsstar.exceptions`; nothing else of the audit layer.
"""
