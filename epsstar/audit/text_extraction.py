"""What a language model repeats: the extraction test of a text audit, :func:`extraction`.

For a seeded sample of the records of each side (``--extraction-records``), the record's
tokens are split into a prefix and a suffix (:class:`~epsstar.audit.data.
extraction_settings.ExtractionSettings`; a record shorter than both is skipped and counted)
and the model is asked what follows the prefix:

* **greedy exact**: the greedy continuation of the prefix is the suffix. It is read from one
  scoring pass over prefix and suffix, without generating: the greedy continuation equals
  the suffix exactly when every suffix token is the most likely token given the prefix and
  the suffix's tokens before it (``TokenScores.correct`` under teacher forcing), since until
  the first token that is not, greedy decoding has fed the model the suffix itself;
* **greedy near-verbatim**: the greedy continuation (generated) within a normalised edit
  distance of :data:`~epsstar.statistics.attacks.extraction.NEAR_VERBATIM` of the suffix;
* **sampled exact** and **sampled near-verbatim**: at least one of ``--extraction-samples``
  continuations drawn under the sampling scheme (temperature, top-k; seeded) is the suffix,
  or near it;
* **(n, p)-discoverable** (Hayes et al. 2024): ``1 − (1 − p_z)^n ≥ p``, with ``p_z`` the
  probability that one sampled continuation is the suffix, computed exactly from the
  scoring pass (the product of the suffix tokens' probabilities under the same scheme).

Each is a rate on the training records beside the same rate on the population's, the
baseline: a model that never saw a record can still produce it (a formula, a common
phrase). The gate (``--max-extraction-rate``) reads the first: the training records' greedy
exact extraction rate minus the population's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.extraction_settings import ExtractionSettings
from epsstar.audit.data.reading import Role
from epsstar.audit.data.text_records import DEFAULT_TEXT_BATCH, TextTables, read_rows
from epsstar.audit.model.text_model import TextModel
from epsstar.audit.output.text_result import (
    ExtractedRecord,
    Extraction,
    ExtractionSide,
    excerpt,
)
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.extraction import (
    DISCOVERABLE,
    NEAR_VERBATIM,
    ExtractionRate,
    discoverable,
    extraction_log_probability,
    normalised_edit_distances,
)

__all__ = ["CONTINUATIONS_PER_CALL", "MOST_EXTRACTED", "check_fits", "extraction"]

#: The training records listed as the most readily extracted.
MOST_EXTRACTED: Final = 10
#: Sampled continuations per model call, whatever ``--batch-size``: each call's generator is
#: seeded from ``--seed`` and the call's first record, so the draws depend on the seed alone;
#: a call holds no more tokens than a scoring call of the text audit's default batch.
CONTINUATIONS_PER_CALL: Final = DEFAULT_TEXT_BATCH
_ROLES: tuple[Role, Role] = ("train", "population")


@dataclass(frozen=True, slots=True)
class _Tested:
    """One side's tested records: their rows, token ids ``(rows, prefix + suffix)`` and
    texts, and how many records were drawn."""

    rows: NDArray[np.int64]
    ids: NDArray[np.int64]
    texts: tuple[str, ...]
    drawn: int


@dataclass(frozen=True, slots=True)
class _Found:
    """What the model did with one side's prefixes, one value per tested record."""

    exact: NDArray[np.bool_]
    log_p_z: NDArray[np.float64]
    greedy_distance: NDArray[np.float64]
    sampled_distances: NDArray[np.float64]


def _drawn_rows(rows: int, settings: ExtractionSettings, seed: int, side: int) -> list[int]:
    """A seeded sample of at most ``extraction_records`` of ``rows`` rows, in order."""
    wanted = min(rows, settings.extraction_records)
    rng = np.random.default_rng([seed, side, 0xE7])
    return sorted(rng.choice(rows, size=wanted, replace=False).tolist())


def _tested(model: TextModel, tables: TextTables, role: Role, rows: int, seed: int) -> _Tested:
    """The drawn records of ``role`` long enough for a prefix and a suffix, cut to them;
    refused when there is none."""
    settings = tables.extraction
    assert settings is not None
    drawn = _drawn_rows(rows, settings, seed, _ROLES.index(role))
    found = read_rows(tables.path(role), tables.text_column, drawn)
    texts = [found[row] for row in drawn]
    ids = model.tokenize(texts)
    keep = [i for i, each in enumerate(ids) if each.size >= settings.tokens]
    if not keep:
        longest = max(each.size for each in ids)
        raise InvalidInputError(
            f"the extraction test needs records of at least --extraction-prefix + "
            f"--extraction-suffix = {settings.tokens} tokens; the longest of the {len(ids):,} "
            f"{role} records drawn has {longest}. Found --extraction-prefix "
            f"{settings.extraction_prefix} and --extraction-suffix {settings.extraction_suffix}."
        )
    return _Tested(
        np.asarray([drawn[i] for i in keep], dtype=np.int64),
        np.stack([ids[i][: settings.tokens] for i in keep]),
        tuple(texts[i] for i in keep),
        len(drawn),
    )


def _batch_seed(seed: int, start: int) -> int:
    return int(np.random.SeedSequence([seed, start]).generate_state(1)[0])


def _run(
    model: TextModel, ids: NDArray[np.int64], settings: ExtractionSettings, seed: int
) -> _Found:
    """Score and continue one batch of records ``(rows, prefix + suffix)``."""
    prefix, suffix = settings.extraction_prefix, settings.extraction_suffix
    rows, samples = ids.shape[0], settings.extraction_samples
    lengths = np.full(rows, ids.shape[1], dtype=np.int64)
    scores = model.score_tokens(ids, lengths, moments=False, sampling=settings.sampling)
    assert scores.sampled_log_probs is not None
    # position t − 1 is about token t: the suffix's tokens are at prefix − 1 … end
    exact = np.asarray(scores.correct[:, prefix - 1 :].all(axis=1), dtype=np.bool_)
    log_p_z = extraction_log_probability(scores.sampled_log_probs[:, prefix - 1 :])
    prefixes, suffixes = ids[:, :prefix], ids[:, prefix:]
    greedy = model.continue_tokens(prefixes, suffix, sampling=None, seed=seed)
    sampled = model.continue_tokens(
        np.repeat(prefixes, samples, axis=0), suffix, sampling=settings.sampling, seed=seed
    )
    return _Found(
        exact,
        log_p_z,
        normalised_edit_distances(greedy, suffixes),
        normalised_edit_distances(sampled, np.repeat(suffixes, samples, axis=0)).reshape(
            rows, samples
        ),
    )


def _found(model: TextModel, tested: _Tested, settings: ExtractionSettings, seed: int) -> _Found:
    """:func:`_run` over ``tested`` in batches of at most :data:`CONTINUATIONS_PER_CALL`
    sampled continuations, each batch's generator seeded from ``seed`` and where the batch
    starts."""
    step = max(1, CONTINUATIONS_PER_CALL // settings.extraction_samples)
    parts = [
        _run(model, tested.ids[start : start + step], settings, _batch_seed(seed, start))
        for start in range(0, tested.ids.shape[0], step)
    ]
    return _Found(
        *(np.concatenate(values) for values in zip(*(_fields(p) for p in parts), strict=True))
    )


def _fields(found: _Found) -> tuple[NDArray[np.generic], ...]:
    return (found.exact, found.log_p_z, found.greedy_distance, found.sampled_distances)


def _measures(found: _Found, settings: ExtractionSettings) -> list[tuple[str, NDArray[np.bool_]]]:
    """Each measure's name and which records it finds extracted, greedy exact first."""
    n = settings.extraction_samples
    return [
        ("greedy exact", found.exact),
        ("greedy near-verbatim", found.greedy_distance <= NEAR_VERBATIM),
        (f"sampled exact (any of {n})", (found.sampled_distances == 0).any(axis=1)),
        (
            f"sampled near-verbatim (any of {n})",
            (found.sampled_distances <= NEAR_VERBATIM).any(axis=1),
        ),
        *[
            (f"({samples}, {p:g})-discoverable", discoverable(found.log_p_z, samples, p))
            for samples, p in DISCOVERABLE
        ],
    ]


def _most_extracted(
    tested: _Tested, found: _Found, record_text: bool
) -> tuple[ExtractedRecord, ...]:
    """The training records of highest ``p_z`` (then of closest greedy continuation)."""
    order = np.lexsort((found.greedy_distance, -found.log_p_z))[:MOST_EXTRACTED]
    return tuple(
        ExtractedRecord(
            row=int(tested.rows[i]),
            log_p_z=float(found.log_p_z[i]),
            greedy_exact=bool(found.exact[i]),
            greedy_distance=float(found.greedy_distance[i]),
            excerpt=excerpt(tested.texts[i]) if record_text else None,
        )
        for i in order
    )


def check_fits(model: TextModel, settings: ExtractionSettings) -> None:
    """Refuse a prefix and a suffix longer together than the model's context."""
    context = model.info.context
    if settings.tokens > context:
        raise InvalidInputError(
            f"--extraction-prefix + --extraction-suffix must fit the model's context of "
            f"{context} tokens. Found {settings.extraction_prefix} + "
            f"{settings.extraction_suffix} = {settings.tokens}."
        )


def extraction(
    model: TextModel,
    tables: TextTables,
    rows: tuple[int, int],
    seed: int,
    confidence: float,
) -> Extraction:
    """The extraction test of ``tables.extraction`` on both sides (``rows`` records each;
    see the module docstring), its rates' intervals at ``confidence``."""
    settings = tables.extraction
    assert settings is not None
    check_fits(model, settings)
    tested = [
        _tested(model, tables, role, count, seed) for role, count in zip(_ROLES, rows, strict=True)
    ]
    found = [
        _found(model, side, settings, _batch_seed(seed, index)) for index, side in enumerate(tested)
    ]
    train, population = (_measures(side, settings) for side in found)
    rates = tuple(
        ExtractionRate.of(name, (mine, theirs), confidence)
        for (name, mine), (_, theirs) in zip(train, population, strict=True)
    )
    return Extraction(
        settings=settings,
        sides=(
            ExtractionSide(tested[0].drawn, tested[0].drawn - tested[0].rows.size),
            ExtractionSide(tested[1].drawn, tested[1].drawn - tested[1].rows.size),
        ),
        rates=rates,
        most_extracted=_most_extracted(tested[0], found[0], tables.record_text),
    )
