"""The differential-privacy guarantee a model file declares it was trained under.

``epsstar train`` records, beside the class labels (:mod:`epsstar.audit.model.class_labels`),
how the model was trained under the key :data:`PRIVACY_KEY` (``"epsstar.privacy"``; an
ONNX ``metadata_props`` entry or a TorchScript extra file): a JSON object
``{"private": true, "epsilon": ε, "delta": δ, "accountant": "pld"}`` for DP-SGD, or
``{"private": false}``. The audit shows a declared ε beside Epsilon*: a model that is
(ε, δ)-DP has a true Epsilon* of at most ε at any δ' ≥ δ (eq. 7 of Negoescu et al. 2024,
"Epsilon*: Privacy Metric for Machine Learning Models", only counts tests that (ε, δ)-DP already
bounds), so an estimate above it is estimation error, not a finding. The declaration is the
exporter's word, recorded as such; nothing here verifies it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Final, TypeGuard

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.records.json_records import JsonRecord

__all__ = ["PRIVACY_KEY", "DeclaredPrivacy", "privacy_from_text", "privacy_to_text"]

PRIVACY_KEY: Final = "epsstar.privacy"
"""The metadata key (ONNX) or extra-file name (TorchScript) holding the declaration."""


@dataclass(frozen=True, slots=True)
class DeclaredPrivacy(JsonRecord):
    """How the model file says it was trained: with DP at (``epsilon``, ``delta``), or not."""

    private: bool
    epsilon: float | None = None
    delta: float | None = None
    accountant: str | None = None


def privacy_to_text(privacy: DeclaredPrivacy) -> str:
    """The JSON text stored under :data:`PRIVACY_KEY`."""
    if not privacy.private:
        return json.dumps({"private": False})
    return json.dumps(
        {
            "private": True,
            "epsilon": privacy.epsilon,
            "delta": privacy.delta,
            "accountant": privacy.accountant,
        }
    )


def _positive(value: object) -> TypeGuard[int | float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def privacy_from_text(text: str | bytes, source: object) -> DeclaredPrivacy | None:
    """The declaration stored under :data:`PRIVACY_KEY`; ``None`` for an empty value.

    ``source`` names the model file in the error raised for a value that is not such an
    object (a private declaration needs a positive finite ``epsilon`` and a ``delta`` in
    [0, 1)).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    try:
        value = parse_json(text, str(source))
    except InputFileError:
        value = None
    problem = f"the {PRIVACY_KEY!r} metadata of {source} must be a JSON object"
    if not isinstance(value, dict) or not isinstance(value.get("private"), bool):
        raise InputFileError(f"{problem} with a boolean 'private'. Found {text[:120]!r}.")
    if not value["private"]:
        return DeclaredPrivacy(private=False)
    epsilon, delta = value.get("epsilon"), value.get("delta")
    if not _positive(epsilon) or not (
        isinstance(delta, int | float) and not isinstance(delta, bool) and 0 <= delta < 1
    ):
        raise InputFileError(
            f"{problem} whose 'epsilon' is a positive number and 'delta' a number in [0, 1). "
            f"Found {text[:120]!r}."
        )
    accountant = value.get("accountant")
    return DeclaredPrivacy(
        private=True,
        epsilon=float(epsilon),
        delta=float(delta),
        accountant=str(accountant) if accountant is not None else None,
    )
