"""Contract tests for model loaders, to run on your own loader in one line.

Every loader, built-in or third-party, must pass the same checks (like scikit-learn's
``parametrize_with_checks`` or fsspec's abstract test suites). In a pytest module::

    import epsstar.audit.model.contract
    from my_package.loader import MyLoader

    test_my_loader = epsstar.audit.model.contract.loader_contract_test(
        MyLoader(), "tests/model.myformat", features
    )

collects one test per check, named after it. Without pytest, :func:`check_loader` runs
them all and raises :class:`AssertionError` at the first failure.

``features`` is a 2-D array of records the model accepts (at least 10 rows, at least one
column). The checks:

* ``loader_protocol`` — ``name``, ``suffixes`` and ``load`` as in
  :class:`~epsstar.audit.model.plugins.ModelLoader`, and ``model_path`` has one of the suffixes;
* ``model_protocol`` — the loaded model has ``n_features`` (``None`` or the width of
  ``features``), ``classes`` (``None`` or a tuple matching the output columns),
  ``output_kind`` and ``predict``;
* ``output_shape_and_dtype`` — float64, ``(n,)`` or ``(n, K ≥ 2)``; the input is left
  unchanged;
* ``finite`` — no NaN or infinity;
* ``probabilities`` — with ``output_kind == "probabilities"``: values in [0, 1] and rows
  summing to 1 within :data:`epsstar.statistics.losses.ROW_SUM_TOLERANCE`;
* ``batch_invariance`` — predicting all rows at once equals predicting in chunks of 1,
  7 and the rest;
* ``determinism`` — two calls, and two loads, give the same predictions;
* ``dtype_casting`` — float32, Fortran-ordered and (for whole-number features) integer
  inputs give the same predictions as float64;
* ``width_validation`` — one column too many or too few raises
  :class:`~epsstar.exceptions.InvalidInputError`, naming both widths when ``n_features``
  is known; 1-D features raise it too;
* ``outputs_override`` — ``load(outputs=k)`` returns a model with ``output_kind == k``
  or refuses with :class:`~epsstar.exceptions.InvalidInputError`;
* ``unreadable_files`` — a missing file, garbage bytes and the first half of
  ``model_path`` raise :class:`~epsstar.exceptions.InputFileError`;
* ``expected`` — if ``expected`` is given, predictions equal it within ``rtol``/``atol``;
* ``object_loading`` — if ``model_object`` is given (the fitted object ``model_path`` was
  saved from): the loader has ``claims_object`` and ``load_object``, claims it and not a
  plain ``object()``, predicts for it what it predicts for the file within
  ``rtol``/``atol``, and gives it the same
  :class:`~epsstar.audit.model.plugins.ObjectIdentity` on two loads (its type, and a
  SHA-256 of 64 hex digits or ``None``).

``trust`` and ``outputs`` are passed to every ``load`` call (pickled models need
``trust=True``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.audit.model.plugins import (
    LoadedModel,
    ModelLoader,
    ObjectIdentity,
    OutputKind,
    type_name,
)
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics.losses import ROW_SUM_TOLERANCE
from epsstar.statistics.names import OUTPUT_KINDS

__all__ = ["CHECKS", "check_loader", "loader_checks", "loader_contract_test"]

Check = Callable[[], None]


def _require(condition: object, message: str) -> None:
    """Like ``assert`` but kept under ``python -O``."""
    if not condition:
        raise AssertionError(message)


class _Case:
    """One loader, one model file and the features to feed it."""

    def __init__(
        self,
        loader: ModelLoader,
        model_path: str | Path,
        features: ArrayLike,
        expected: ArrayLike | None,
        outputs: OutputKind | None,
        trust: bool,
        rtol: float,
        atol: float,
        model_object: object = None,
    ) -> None:
        self.loader = loader
        self.model_object = model_object
        self.path = Path(model_path)
        self.features = np.array(features, dtype=np.float64)
        if self.features.ndim != 2 or self.features.shape[0] < 10 or self.features.shape[1] < 1:
            raise ValueError(
                "features must be a 2-D array with at least 10 rows and 1 column. "
                f"Found shape {self.features.shape}."
            )
        self.expected = None if expected is None else np.asarray(expected, dtype=np.float64)
        self.outputs = outputs
        self.trust = trust
        self.rtol = rtol
        self.atol = atol
        self._model: LoadedModel | None = None

    def load(self, path: Path | None = None, outputs: OutputKind | None = None) -> LoadedModel:
        return self.loader.load(
            self.path if path is None else path,
            outputs=self.outputs if outputs is None else outputs,
            trust=self.trust,
        )

    @property
    def model(self) -> LoadedModel:
        if self._model is None:
            self._model = self.load()
        return self._model

    def predict(self, features: NDArray[Any] | None = None) -> NDArray[Any]:
        return self.model.predict(self.features if features is None else features)

    def close(self, actual: NDArray[Any], desired: NDArray[Any], what: str) -> None:
        np.testing.assert_allclose(
            actual, desired, rtol=self.rtol, atol=self.atol, err_msg=f"{self.path}: {what}"
        )

    # -------------------------------------------------------------------- checks

    def loader_protocol(self) -> None:
        loader = self.loader
        name = getattr(loader, "name", None)
        _require(isinstance(name, str) and name, f"loader.name must be a non-empty str: {name!r}")
        suffixes = getattr(loader, "suffixes", None)
        if not isinstance(suffixes, tuple) or not suffixes:
            raise AssertionError(f"suffixes must be a non-empty tuple: {suffixes!r}")
        for suffix in suffixes:
            _require(
                isinstance(suffix, str) and suffix.startswith(".") and len(suffix) > 1,
                f"each suffix must be a str starting with '.': {suffix!r}",
            )
        _require(callable(getattr(loader, "load", None)), "loader.load must be callable")
        file_name = self.path.name.lower()
        _require(
            any(file_name.endswith(s.lower()) for s in suffixes),
            f"{self.path.name} must end with one of the loader's suffixes {suffixes}",
        )

    def model_protocol(self) -> None:
        model = self.model
        width = model.n_features
        _require(
            width is None or (isinstance(width, int) and not isinstance(width, bool)),
            f"n_features must be an int or None: {width!r}",
        )
        if width is not None:
            _require(
                width == self.features.shape[1],
                f"n_features is {width} but the features have {self.features.shape[1]} columns",
            )
        _require(callable(getattr(model, "predict", None)), "the model must have predict()")
        output = self.predict()
        _require(
            model.output_kind in OUTPUT_KINDS,
            f"output_kind must be {OUTPUT_KINDS.alternatives()}: {model.output_kind!r}",
        )
        classes = model.classes
        _require(
            classes is None or isinstance(classes, tuple), f"classes must be a tuple: {classes}"
        )
        if classes is not None:
            columns = 2 if output.ndim == 1 else output.shape[1]
            _require(
                len(classes) == columns,
                f"{len(classes)} classes {classes} for {columns} output classes",
            )
            _require(len(set(classes)) == len(classes), f"classes must be distinct: {classes}")

    def output_shape_and_dtype(self) -> None:
        before = self.features.copy()
        output = self.predict()
        np.testing.assert_array_equal(self.features, before, "predict() changed its input")
        _require(
            isinstance(output, np.ndarray), f"predict() must return an ndarray: {type(output)}"
        )
        _require(output.dtype == np.float64, f"predictions must be float64: {output.dtype}")
        n = self.features.shape[0]
        _require(
            output.shape == (n,) or (output.ndim == 2 and output.shape[0] == n),
            f"predictions must have shape ({n},) or ({n}, K): {output.shape}",
        )
        if output.ndim == 2:
            _require(
                output.shape[1] >= 2, f"K must be at least 2 (else return 1-D): {output.shape}"
            )

    def finite(self) -> None:
        output = self.predict()
        _require(
            np.all(np.isfinite(output)), f"{int((~np.isfinite(output)).sum())} values not finite"
        )

    def probabilities(self) -> None:
        output = self.predict()  # a loader may decide its output kind on the first batch
        if self.model.output_kind != "probabilities":
            return
        _require(np.all((output >= 0.0) & (output <= 1.0)), "probabilities must be in [0, 1]")
        if output.ndim == 2:
            worst = float(np.abs(output.sum(axis=1) - 1.0).max())
            _require(worst <= ROW_SUM_TOLERANCE, f"rows must sum to 1; worst deviation {worst:g}")

    def batch_invariance(self) -> None:
        whole = self.predict()
        x = self.features
        chunks = [self.predict(x[:1]), self.predict(x[1:8]), self.predict(x[8:])]
        self.close(np.concatenate(chunks, axis=0), whole, "predictions in chunks differ")
        self.close(self.predict(x[3:4]), whole[3:4], "a single row predicted alone differs")

    def determinism(self) -> None:
        first = self.predict()
        np.testing.assert_array_equal(self.predict(), first, "a second predict() differs")
        np.testing.assert_array_equal(
            self.load().predict(self.features), first, "a second load() predicts differently"
        )

    def dtype_casting(self) -> None:
        reference = self.predict()
        x32 = self.features.astype(np.float32)
        self.close(
            self.predict(x32),
            self.predict(x32.astype(np.float64)),
            "float32 input predicts differently from the same values in float64",
        )
        self.close(
            self.predict(np.asfortranarray(self.features)), reference, "Fortran order differs"
        )
        if np.all(self.features == np.round(self.features)):
            self.close(
                self.predict(self.features.astype(np.int64)), reference, "int64 input differs"
            )

    def width_validation(self) -> None:
        x = self.features
        width = self.model.n_features
        wrong = [np.concatenate([x, x[:, :1]], axis=1)]
        if x.shape[1] > 1:
            wrong.append(x[:, :-1])
        for features in wrong:
            try:
                self.predict(features)
            except InvalidInputError as error:
                if width is not None:
                    message = str(error)
                    _require(
                        str(width) in message and str(features.shape[1]) in message,
                        f"the width error must name {width} and {features.shape[1]}: {message}",
                    )
            else:
                raise AssertionError(
                    f"predict() with {features.shape[1]} columns must raise InvalidInputError"
                )
        try:
            self.predict(x[0])
        except InvalidInputError:
            pass
        else:
            raise AssertionError("predict() with 1-D features must raise InvalidInputError")

    def outputs_override(self) -> None:
        detected = self.predict()  # a loader may decide its output kind on the first batch
        for kind in OUTPUT_KINDS:
            try:
                model = self.load(outputs=kind)
                predicted = model.predict(self.features)
            except InvalidInputError:  # refused, on loading or on the first batch
                continue
            _require(
                model.output_kind == kind, f"load(outputs={kind!r}) gave {model.output_kind!r}"
            )
            if kind == self.model.output_kind:
                np.testing.assert_array_equal(predicted, detected)

    def unreadable_files(self) -> None:
        suffix = next(s for s in self.loader.suffixes if self.path.name.lower().endswith(s.lower()))
        payload = self.path.read_bytes()
        with tempfile.TemporaryDirectory() as folder:
            missing = Path(folder) / f"missing{suffix}"
            garbage = Path(folder) / f"garbage{suffix}"
            garbage.write_bytes(bytes(range(256)) * 8)
            truncated = Path(folder) / f"truncated{suffix}"
            truncated.write_bytes(payload[: len(payload) // 2])
            for path in (missing, garbage, truncated):
                try:
                    self.load(path)
                except InputFileError as error:
                    message = str(error)
                    _require("\n" not in message, f"keep the message on one line: {message!r}")
                    _require(path.name in message, f"name the file in the message: {message!r}")
                else:
                    raise AssertionError(f"load() of {path.name} must raise InputFileError")

    def expected_predictions(self) -> None:
        if self.expected is None:
            return
        self.close(self.predict(), self.expected, "predictions differ from the expected ones")

    def object_loading(self) -> None:
        obj = self.model_object
        if obj is None:
            return
        claims = getattr(self.loader, "claims_object", None)
        load_object = getattr(self.loader, "load_object", None)
        if not (callable(claims) and callable(load_object)):
            raise AssertionError("a loader of objects has claims_object and load_object")
        _require(claims(obj), f"the loader must claim the {type_name(obj)} it was given")
        _require(not claims(object()), "the loader must not claim a plain object()")
        loaded = load_object(obj, outputs=self.outputs)
        self.close(loaded.predict(self.features), self.predict(), "the object predicts otherwise")
        identity = getattr(loaded, "identity", None)
        if not isinstance(identity, ObjectIdentity):
            raise AssertionError(f"the model must have an ObjectIdentity, not {identity!r}")
        _require(identity.type == type_name(obj), f"the identity names {identity.type!r}")
        digest = identity.sha256
        _require(
            digest is None or (len(digest) == 64 and set(digest) <= set("0123456789abcdef")),
            f"a SHA-256 of 64 hex digits or None, not {digest!r}",
        )
        again = getattr(load_object(obj, outputs=self.outputs), "identity", None)
        _require(again == identity, f"a second load_object() gives another identity: {again!r}")


CHECKS: tuple[str, ...] = (
    "loader_protocol",
    "model_protocol",
    "output_shape_and_dtype",
    "finite",
    "probabilities",
    "batch_invariance",
    "determinism",
    "dtype_casting",
    "width_validation",
    "outputs_override",
    "unreadable_files",
    "expected_predictions",
    "object_loading",
)
"""Names of the checks, in the order they run."""


def loader_checks(
    loader: ModelLoader,
    model_path: str | Path,
    features: ArrayLike,
    *,
    expected: ArrayLike | None = None,
    outputs: OutputKind | None = None,
    trust: bool = False,
    rtol: float = 1e-6,
    atol: float = 1e-7,
    model_object: object = None,
) -> list[tuple[str, Check]]:
    """``(name, check)`` pairs; each check takes no argument and raises AssertionError.

    The model is loaded once, on the first check that needs it, and shared.
    """
    case = _Case(loader, model_path, features, expected, outputs, trust, rtol, atol, model_object)
    return [(name, getattr(case, name)) for name in CHECKS]


def check_loader(
    loader: ModelLoader,
    model_path: str | Path,
    features: ArrayLike,
    *,
    expected: ArrayLike | None = None,
    outputs: OutputKind | None = None,
    trust: bool = False,
    rtol: float = 1e-6,
    atol: float = 1e-7,
    model_object: object = None,
) -> None:
    """Run every check; raise AssertionError naming the first that fails."""
    for name, check in loader_checks(
        loader,
        model_path,
        features,
        expected=expected,
        outputs=outputs,
        trust=trust,
        rtol=rtol,
        atol=atol,
        model_object=model_object,
    ):
        try:
            check()
        except AssertionError as error:
            raise AssertionError(f"loader contract check {name!r} failed: {error}") from error


def loader_contract_test(
    loader: ModelLoader,
    model_path: str | Path,
    features: ArrayLike,
    *,
    expected: ArrayLike | None = None,
    outputs: OutputKind | None = None,
    trust: bool = False,
    rtol: float = 1e-6,
    atol: float = 1e-7,
    model_object: object = None,
) -> Callable[[str], None]:
    """A pytest test function, parametrized with one case per check.

    Assign it to a module-level name starting with ``test_``; the checks are built (and
    the model loaded) only when the tests run.
    """
    import pytest

    cache: dict[str, Check] = {}

    def run(check: str) -> None:
        if not cache:
            cache.update(
                loader_checks(
                    loader,
                    model_path,
                    features,
                    expected=expected,
                    outputs=outputs,
                    trust=trust,
                    rtol=rtol,
                    atol=atol,
                    model_object=model_object,
                )
            )
        cache[check]()

    test: Callable[[str], None] = pytest.mark.parametrize("check", CHECKS)(run)
    return test
