"""What a ``.skops`` file may hold without ``--trust-model``: a reviewed list of
scikit-learn's own types (:mod:`.reviewed`) and the bounds checks that make its tree
types safe to run (:mod:`.tree_bounds`)."""
