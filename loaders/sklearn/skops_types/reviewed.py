"""scikit-learn's own types that epsstar lets skops load without ``--trust-model``.

skops (``skops.io``) rebuilds only the types it trusts; it leaves out several internal
types of ordinary scikit-learn estimators, so their files would need ``--trust-model``
and users would learn to always pass it. The types below were reviewed one by one
against scikit-learn 1.9.1 and skops 0.16.0 (the versions installed when the list was
written; ``tests/loaders/test_skops_reviewed_types.py`` builds each estimator with the
installed versions, saves it with skops and audits it without trust). A type is on the
list when

* skops rebuilds it from data only: its state is numbers, strings, numpy arrays and
  other nodes that skops checks separately (a ``functools.partial`` runs nothing while it
  is loaded, and the function it wraps is a node of its own that must be trusted too);
* loading sets that state without running code chosen by the file (no ``__reduce__``
  to an arbitrary callable, no ``__setstate__`` beyond assigning attributes); and
* predicting with it only does arithmetic on that state, or indexes arrays in a way
  numpy checks, **or** its unchecked indices are checked by epsstar before the model
  runs. This last case is the two tree types: skops leaves them untrusted on purpose
  (``skops.io.exceptions.UNTRUSTED_TYPE_REASONS``) because scikit-learn walks their node
  arrays in compiled code without bounds checks, so a crafted file could crash the
  process or read memory it should not. :func:`~.tree_bounds.check_tree_bounds`
  verifies every child, feature and category-bitset index of every tree before the
  first prediction, and refuses the file otherwise.

Types left off after review (they still need ``--trust-model``): the k-d and ball trees
of nearest-neighbour models (raw indices, like the trees, that epsstar does not check),
``scipy.interpolate.BSpline`` (compiled evaluation indexed by the file's knots),
Gaussian-process kernels (not reviewed), ``make_column_selector`` (it stores a class and
a regular expression; not reviewed), and anything outside scikit-learn, numpy and
functools. Adding a type: review it as above, add it here with the estimator that needs
it, and add that estimator to the test.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REVIEWED_TYPES", "TREE_TYPES"]

TREE_TYPES: Final = frozenset(
    {
        # DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, AdaBoost, Bagging.
        "sklearn.tree._tree.Tree",
        # HistGradientBoosting*.
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    }
)
"""Types whose node indices :mod:`.tree_bounds` checks before the model runs."""

REVIEWED_TYPES: Final = TREE_TYPES | frozenset(
    {
        # CalibratedClassifierCV: one calibrated classifier per fold, and its calibrators
        # (isotonic regression is a public estimator, which skops trusts already).
        "sklearn.calibration._CalibratedClassifier",
        "sklearn.calibration._SigmoidCalibration",
        "sklearn.calibration._TemperatureScaling",
        # MLPClassifier: the optimiser's state, kept for warm starts and never used to predict.
        "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
        "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
        # HistGradientBoosting* with categorical features: its preprocessor's check_array,
        # wrapped with fixed keyword arguments.
        "functools.partial",
        "sklearn.utils.validation.check_array",
        # numpy dtypes kept by transformers in pipelines (KBinsDiscretizer, ...): a dtype
        # is rebuilt from its type code and holds no code.
        "numpy.dtype",
        # StackingClassifier and VotingClassifier keep their named estimators in a Bunch,
        # a dict whose keys are also attributes.
        "sklearn.utils._bunch.Bunch",
    }
)
"""Fully qualified type names passed to skops' ``trusted=`` (see the module docstring)."""
