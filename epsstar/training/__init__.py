"""DP-SGD reference trainer: logistic regression and MLPs on numeric feature tables.

The trainer produces reference models (with and without differential privacy)
so that users can see what Epsilon* looks like for both on their own data, as in
§4 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models". Modules,
one idea each:

* :mod:`~epsstar.training.data.tables` — a table with a label column, read by
  :mod:`epsstar.audit.data.tables`;
* :mod:`~epsstar.training.models` — the MLP, and the exported model
  (standardise → MLP → probabilities);
* :mod:`~epsstar.training.standardisation` — the table the standardisation is fitted on,
  public data under DP;
* :mod:`~epsstar.training.clipping` — exact per-example (or per-microbatch) clipped gradient sums
  without materialising per-example gradients;
* :mod:`~epsstar.training.accounting` — ε from (σ, q, steps, δ) and σ for a target ε;
* :mod:`~epsstar.training.trainer` — the DP-SGD loop;
* :mod:`~epsstar.training.runs.export` — ONNX, TorchScript and ``training.json``;
* :mod:`~epsstar.training.runs.sweep` — resumable grids of training runs with a manifest;
* :mod:`~epsstar.training.runs.pipeline` — read, train and write one model directory.

Importing this package does not import torch; the submodules that need it do.
"""

from __future__ import annotations
