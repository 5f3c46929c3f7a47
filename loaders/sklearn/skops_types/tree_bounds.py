"""Checks that every tree in a loaded scikit-learn model stays inside its own arrays.

scikit-learn predicts with its trees in compiled code that follows the node arrays'
child and feature indices without bounds checks (the reason skops leaves
``sklearn.tree._tree.Tree`` and HistGradientBoosting's ``TreePredictor`` untrusted;
``skops.io.exceptions.UNTRUSTED_TYPE_REASONS``). Trees grown by scikit-learn number
every node before its children (depth-first or best-first, each child is added after
its parent), so a tree is safe to walk when, for every split node ``i``:

* both children are in ``(i, n_nodes)``: every walk moves forward and ends at a leaf
  inside the array;
* its feature is in ``[0, n_features_in_)`` of the estimator that owns the tree (the
  width scikit-learn checks the input against);
* for a categorical split (HistGradientBoosting), its bitset row exists and the owner's
  bin mapper marks that feature categorical (the row of known categories it reads).

A ``Tree`` (``sklearn.tree``) is checked through its owner's ``tree_``, a
``TreePredictor`` through its owner's ``_predictors``; a tree found anywhere else has no
owner to check it against and is refused. Written by hand because neither scikit-learn
nor skops offers the check (scikit-learn's ``Tree.__setstate__`` checks the array
layout, not the indices).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError

__all__ = ["check_tree_bounds"]

_LEAF = -1  # sklearn.tree._tree.TREE_LEAF
_BITSET_WORDS = 8  # 256 categories in uint32 words: sklearn's BITSET_INNER_DTYPE rows


def check_tree_bounds(estimator: object, source: object) -> None:
    """Refuse ``estimator`` (loaded from ``source``) if one of its trees is out of bounds."""
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree._tree import Tree

    checked: set[int] = set()
    found: list[object] = []
    for item in _objects(estimator):
        if isinstance(item, Tree | TreePredictor):
            found.append(item)
        tree = getattr(item, "tree_", None) if not isinstance(item, type) else None
        if isinstance(tree, Tree):
            _check_tree(tree, _width(item), source)
            checked.add(id(tree))
        predictors = getattr(item, "_predictors", None) if not isinstance(item, type) else None
        if isinstance(predictors, list):
            categorical = getattr(getattr(item, "_bin_mapper", None), "is_categorical_", None)
            for predictor in _flat(predictors):
                if isinstance(predictor, TreePredictor):
                    _check_predictor(predictor, _width(item), categorical, source)
                    checked.add(id(predictor))
    for tree in found:
        if id(tree) not in checked:
            _refuse(source, f"a {type(tree).__name__} outside the estimator that owns it")


def _objects(root: object) -> Iterator[object]:
    """Every object reachable from ``root`` through attributes, containers and object arrays."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, str | bytes | int | float | bool | type(None)):
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            if item.dtype == object:
                stack.extend(item.ravel().tolist())
        elif not isinstance(item, type) and hasattr(item, "__dict__"):
            stack.extend(vars(item).values())


def _flat(items: list[Any]) -> Iterator[object]:
    for item in items:
        if isinstance(item, list | tuple):
            yield from _flat(list(item))
        else:
            yield item


def _width(owner: object) -> int:
    width = getattr(owner, "n_features_in_", None)
    if not isinstance(width, int | np.integer) or width < 1:
        return 0  # no declared width: every split's feature is out of bounds
    return int(width)


def _check_tree(tree: Any, width: int, source: object) -> None:
    count = int(tree.node_count)
    left = np.asarray(tree.children_left)
    right = np.asarray(tree.children_right)
    feature = np.asarray(tree.feature)
    if not (len(left) == len(right) == len(feature) == count >= 1):
        _refuse(source, f"a decision tree whose node arrays do not hold its {count} nodes")
    if np.asarray(tree.value).shape[0] != count:
        _refuse(source, f"a decision tree whose values do not match its {count} nodes")
    leaf = left == _LEAF
    if np.any(leaf != (right == _LEAF)):
        _refuse(source, "a decision tree node with one child")
    _check_splits(~leaf, left, right, feature, width, source)


def _check_predictor(
    predictor: Any, width: int, categorical: NDArray[Any] | None, source: object
) -> None:
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    nodes = predictor.nodes
    if (
        not isinstance(nodes, np.ndarray)
        or nodes.dtype != PREDICTOR_RECORD_DTYPE
        or nodes.ndim != 1
    ):
        _refuse(source, "a histogram-boosting tree whose nodes are not scikit-learn's records")
    if len(nodes) < 1:
        _refuse(source, "a histogram-boosting tree without nodes")
    split = nodes["is_leaf"] == 0
    left, right = nodes["left"].astype(np.int64), nodes["right"].astype(np.int64)
    feature = nodes["feature_idx"].astype(np.int64)
    _check_splits(split, left, right, feature, width, source)
    on_category = split & (nodes["is_categorical"] != 0)
    if np.any(on_category):
        rows = np.asarray(predictor.raw_left_cat_bitsets)
        if rows.ndim != 2 or rows.shape[1] != _BITSET_WORDS:
            _refuse(source, "a histogram-boosting tree whose category bitsets are malformed")
        if np.any(nodes["bitset_idx"][on_category] >= rows.shape[0]):
            _refuse(source, "a histogram-boosting split on a category bitset it does not hold")
        flags = np.asarray(categorical if categorical is not None else [], dtype=bool)
        if len(flags) != width or not np.all(flags[feature[on_category]]):
            _refuse(source, "a categorical split on a feature that is not categorical")


def _check_splits(
    split: NDArray[np.bool_],
    left: NDArray[Any],
    right: NDArray[Any],
    feature: NDArray[Any],
    width: int,
    source: object,
) -> None:
    index = np.arange(len(left))
    count = len(left)
    for name, child in (("left", left), ("right", right)):
        bad = split & ((child <= index) | (child >= count))
        if np.any(bad):
            node = int(index[bad][0])
            _refuse(source, f"a tree whose node {node} has {name} child {int(child[node])}")
    bad = split & ((feature < 0) | (feature >= width))
    if np.any(bad):
        node = int(index[bad][0])
        _refuse(
            source,
            f"a tree whose node {node} splits on feature {int(feature[node])} of a "
            f"{width}-feature input",
        )


def _refuse(source: object, what: str) -> None:
    raise InvalidInputError(
        f"the skops file {source} must hold trees that scikit-learn built (every node's "
        f"children after it, features within the input); refusing to run it. Found {what}."
    )
