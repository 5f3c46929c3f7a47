"""The table the trainer's standardiser is fitted on, and whether the DP guarantee covers it.

The exported model standardises raw features, (x − mean) / std, before its network. Fitted on
the training records, without noise, the mean and the standard deviation release something of
every record that DP-SGD's accountant does not count: an audit of the trainer on two records
refutes its claim through them alone (``docs/training-audit.md``). So DP training fits them on
public data, never on the private records (``--standardise-on``, the choices of
:data:`~epsstar.statistics.names.STANDARDISATIONS`):

* ``population``: the population table, which holds no training record;
* ``data``: the training table (outside the guarantee; what a run without privacy uses when no
  population is given);
* ``none``: the identity, the features as they are.

When the run names none (:func:`chosen`), it standardises on the population when one is given;
otherwise without privacy on the data, and with privacy it stops with an error that names the
two ways out.
"""

from __future__ import annotations

import numpy as np
import torch

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.names import STANDARDISATIONS, StandardiseOn
from epsstar.training.data.tables import TabularData
from epsstar.training.models import Standardiser

__all__ = ["chosen", "covered_by_guarantee", "fitted"]

_NO_POPULATION = "--standardise-on population needs a population table (--population). Found none."


def chosen(named: str | None, *, private: bool, has_population: bool) -> StandardiseOn:
    """The table a run standardises on: ``named`` when given (``population`` only with a
    population table), else the module's rule; a one-line error otherwise."""
    if named is not None:
        choice = STANDARDISATIONS.check(named)
        if choice == "population" and not has_population:
            raise InvalidInputError(_NO_POPULATION)
        return choice
    if has_population:
        return "population"
    if not private:
        return "data"
    raise InvalidInputError(
        "DP training standardises its features on public data, never on the private "
        "training records: give a population table (--population), or say --standardise-on "
        "data (outside the guarantee) or none. Found neither."
    )


def fitted(
    choice: StandardiseOn, data: TabularData, population: TabularData | None, dtype: torch.dtype
) -> Standardiser:
    """The standardiser of ``choice``: fitted on ``population`` or ``data``, or the identity."""
    if choice == "none":
        width = data.n_features
        return Standardiser(torch.zeros(width, dtype=dtype), torch.ones(width, dtype=dtype))
    if choice == "population":
        if population is None:
            raise InvalidInputError(_NO_POPULATION)
        return Standardiser.fit(np.asarray(population.features, dtype=np.float64), dtype)
    return Standardiser.fit(data.features, dtype)


def covered_by_guarantee(choice: StandardiseOn, private: bool) -> bool | None:
    """Whether the (ε, δ) guarantee of a run covers its standardisation (None: no guarantee)."""
    return None if not private else choice != "data"
