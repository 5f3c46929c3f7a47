"""The columns a gradient-boosted tree model receives, categorical ones read as it was trained.

LightGBM and XGBoost split a categorical feature on its integer *codes*: the position of a
category in the list the model was trained with. A model trained from a pandas DataFrame
records that list per feature (LightGBM's ``pandas_categorical``, XGBoost ≥ 3.1's
categories); the data of an audit holds the categories themselves (text, or numbers for a
category of numbers) or the codes. :class:`CategoricalReader` turns a batch of typed
columns into the float64 matrix of numbers and codes the library predicts on:

* a numeric feature takes numbers; NaN is passed on as a missing value;
* a categorical feature with recorded categories takes **text**, matched to the recorded
  categories by its text (``"red"``, or ``"3"`` for a category 3), or **numbers**, which
  are the categories themselves when the recorded categories are numbers (or text that
  reads as numbers, which the table reader turns into numbers) and the codes otherwise
  (the codes are what a category column of text becomes in a numeric file);
* a categorical feature without recorded categories (trained on codes) takes numbers,
  which are the codes, and refuses text;
* codes are passed as the library reads numbers on a categorical feature (LightGBM and
  XGBoost truncate them; a negative code or NaN is missing); a category the model was not
  trained on is a missing value, as both libraries score it (LightGBM's ``predict`` on a
  DataFrame, XGBoost's on ``category`` columns of the training categories), and the
  records holding one are counted for :meth:`CategoricalReader.notes`.

:meth:`CategoricalReader.frame` gives the same records as the DataFrame of ``category``
columns the library's own ``predict`` takes, built without the codes read here, so that a
sample of records can be scored both ways (:mod:`epsstar.audit.model.own_predictions`).

The mapping is done here, with pandas, rather than by handing the library a DataFrame: the
codes then do not depend on which categories a batch happens to hold, a numeric file's
codes are read as codes, and the library's own reading remains an independent check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features, is_numeric_dtype
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["CategoricalReader", "Categories"]

FloatArray = NDArray[np.float64]


def _reads_as_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


@dataclass(frozen=True, slots=True)
class Categories:
    """The categories a model recorded for one feature, in the order of their codes."""

    values: tuple[object, ...]

    @property
    def by_value(self) -> bool:
        """Whether numbers in the data are these categories (rather than their codes)."""
        return bool(self.values) and all(_reads_as_number(value) for value in self.values)

    def codes(self, column: NDArray[Any]) -> NDArray[np.int64]:
        """The code of each value (−1 when missing or not a recorded category)."""
        import pandas as pd

        if is_numeric_dtype(column.dtype):
            index = pd.Index([float(str(value)) for value in self.values], dtype=np.float64)
            keys: NDArray[Any] = column.astype(np.float64)
        else:
            index = pd.Index([str(value) for value in self.values], dtype=object)
            keys = np.asarray(column, dtype=object)
        return np.asarray(index.get_indexer(pd.Index(keys)), dtype=np.int64)

    def shown(self, limit: int = 5) -> str:
        """The first categories, for messages."""
        head = ", ".join(repr(value) for value in self.values[:limit])
        return head + (", …" if len(self.values) > limit else "")


def _plain(value: object) -> object:
    """A value as Python shows it (``'red'``, not ``np.str_('red')``), for messages."""
    if isinstance(value, str):
        return str(value)
    return value.item() if isinstance(value, np.generic) else value


def _first_text(column: NDArray[Any]) -> object:
    return _plain(next((value for value in column if isinstance(value, str)), column[0]))


class CategoricalReader:
    """Reads typed columns into a GBDT model's float64 input (see the module docstring).

    ``categorical`` maps the index of each categorical feature to its recorded
    :class:`Categories`, or to ``None`` when the model recorded none; ``why_no_categories``
    ends the message refusing text where there are none. The records of :meth:`matrix`
    that held a category the model never saw are counted (:meth:`notes`).
    """

    def __init__(
        self,
        source: Path,
        library: str,
        names: Sequence[str],
        categorical: Mapping[int, Categories | None],
        *,
        why_no_categories: str = "",
    ) -> None:
        self._source = source
        self._library = library
        self._names = tuple(names)
        self._categorical = dict(categorical)
        self._why = why_no_categories
        self._unseen_records = 0

    @property
    def takes_text(self) -> bool:
        """Whether some feature reads text (a categorical feature with recorded categories)."""
        return any(categories is not None for categories in self._categorical.values())

    @property
    def categorical(self) -> tuple[int, ...]:
        """The indices of the categorical features."""
        return tuple(sorted(self._categorical))

    def notes(self) -> tuple[str, ...]:
        """What the audit should say about the records read so far: how many held a
        category the model was not trained on (scored as missing)."""
        if not self._unseen_records:
            return ()
        return (
            f"{self._unseen_records:,} record(s) held a category the {self._library} model in "
            f"{self._source.name} was not trained on; each such value was scored as a missing "
            f"value, as {self._library} scores it",
        )

    def matrix(self, features: Features, *, counted: bool = True) -> FloatArray:
        """The ``(rows, d)`` float64 input: numbers, and codes for the categorical features;
        ``counted`` adds its records holding unseen categories to :meth:`notes`."""
        width = len(self._names)
        if features.is_tensor or features.width != width:
            raise InvalidInputError(
                f"features must have {width} columns, the input width of {self._source}. "
                f"Found {features.width} column(s) of records shaped {features.record_shape}."
            )
        out = np.empty((features.rows, width), dtype=np.float64)
        unseen = np.zeros(features.rows, dtype=bool)
        for j, (name, column) in enumerate(zip(features.names, features.columns, strict=True)):
            if j in self._categorical:
                out[:, j] = self._codes(j, name, column, unseen)
            elif is_numeric_dtype(column.dtype):
                out[:, j] = column
            else:
                raise InvalidInputError(
                    f"feature column {name!r} must be numeric for the {self._library} model in "
                    f"{self._source}, which does not read it as a category. Found "
                    f"{_first_text(column)!r}."
                )
        if counted:
            self._unseen_records += int(unseen.sum())
        return out

    def frame(self, features: Features, matrix: FloatArray) -> pd.DataFrame | None:
        """The records as the library's own ``predict`` takes them from pandas: a
        ``category`` column per feature with recorded categories, built from the text as
        it is (the library maps it) or from the codes in ``matrix``; ``None`` when no
        feature has recorded categories or a code is not one of them (the library reads
        such numbers only from an array)."""
        if not self.takes_text:
            return None
        import pandas as pd

        columns: dict[str, Any] = {}
        for j, name in enumerate(self._names):
            categories = self._categorical.get(j)
            column = features.columns[j]
            if categories is None:
                columns[name] = matrix[:, j]
            elif not is_numeric_dtype(column.dtype):
                # the recorded categories: a value the model never saw is missing
                texts = [str(value) for value in categories.values]
                columns[name] = pd.Categorical(column).set_categories(texts)
            else:
                codes = matrix[:, j]
                known = np.isfinite(codes)
                whole = codes[known]
                valid = (whole == np.floor(whole)) & (whole >= 0) & (whole < len(categories.values))
                if not valid.all():
                    return None
                as_int = np.where(known, codes, -1).astype(np.int64)
                recorded = pd.Index(list(categories.values))
                columns[name] = pd.Categorical.from_codes(as_int, categories=recorded)
        return pd.DataFrame(columns, columns=list(self._names))

    def _codes(
        self, j: int, name: str, column: NDArray[Any], unseen: NDArray[np.bool_]
    ) -> FloatArray:
        """The codes of one categorical column; marks ``unseen`` where it holds a category
        the model was not trained on."""
        categories = self._categorical[j]
        numeric = is_numeric_dtype(column.dtype)
        if numeric and (categories is None or not categories.by_value):
            return column.astype(np.float64)  # codes, as the library reads numbers
        if categories is None:
            raise InvalidInputError(
                f"feature column {name!r} must hold the category codes the {self._library} "
                f"model in {self._source} splits on: it records no categories to read text "
                f"as{self._why}. Found {_first_text(column)!r}."
            )
        import pandas as pd

        codes = categories.codes(column)
        absent = codes < 0
        unseen |= absent & ~np.asarray(pd.isna(column), dtype=bool)
        out = codes.astype(np.float64)
        out[absent] = np.nan  # missing, or a category the model never saw
        return out
