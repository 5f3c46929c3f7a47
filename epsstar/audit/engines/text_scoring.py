"""Scoring text records with a causal language model, fast on a CPU.

:func:`score_text` streams one data set's records in chunks of
:data:`~epsstar.audit.data.text_records.TEXT_CHUNK_ROWS` (:func:`iter_text_chunks`), so
memory follows the chunk, not the corpus. Each chunk is tokenised in one call of the
model's tokenizer; a record longer than the model's context is cut into overlapping windows
of ``context`` tokens, each starting ``stride = context // 2`` tokens after the last
(Hugging Face's sliding-window perplexity: each token is scored once, in the first window
that holds it past the previous window's end, so with at least ``context − stride`` tokens
before it). The pieces are sorted by length and cut into batches of at most
``batch_size`` pieces and :data:`TOKEN_BUDGET` padded tokens where padding and model calls
cost least (:func:`_cuts`); each batch runs once through the model
(:meth:`TextModel.score_tokens`) and a padding mask keeps the scored positions. A record's
statistics (:mod:`epsstar.statistics.attacks.text_scores`) are then computed over all its
scored tokens, one padded array per chunk.

The first token of a record is never predicted, so a record needs two tokens (a tokenizer
that adds a beginning-of-sequence token gives every non-empty record two); shorter records
are refused by row. The lower-case pass of the lowercase attack runs over the same chunk
right after, with the loss alone.

Every chunk is scored alone, so a data set can be scored a range of chunks at a time
(:func:`score_chunks`, one range per task on a Dask cluster, :func:`chunk_ranges`) and the
ranges joined in order (:func:`joined_scores`) for what :func:`score_text` gives at once.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.sequences import SequenceStatistics
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.text_records import TEXT_CHUNK_ROWS, TextChunk, iter_text_chunks
from epsstar.audit.model.text_model import TextModel
from epsstar.audit.output.text_result import WindowsUsed
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.attacks.text_scores import (
    mean_token_loss,
    min_k_percent,
    min_k_plus_plus,
)

__all__ = [
    "TOKEN_BUDGET",
    "ChunkRange",
    "ScoredChunks",
    "ScoringPlan",
    "chunk_ranges",
    "joined_scores",
    "score_chunks",
    "score_text",
]

#: Chunks ``first`` up to ``stop`` (``None``: to the end) of a data set.
ChunkRange = tuple[int, int | None]

#: Most padded tokens in one model call.
TOKEN_BUDGET: Final = 8192
#: What one model call costs beyond its tokens, counted in padded tokens: the batches are cut
#: where padding and calls cost least (:func:`_cuts`). On the benchmark's small GPT-2, one
#: call on 2 tokens takes 6.2 ms, the body's time for some 35 tokens (docs/text.md).
CALL_COST: Final = 64


@dataclass(frozen=True, slots=True)
class ScoringPlan:
    """What to compute per record: Min-K% (at ``min_k``, ``None``: not), the vocabulary
    moments of Min-K%++, the loss on the lower-case text; at most ``batch_size`` pieces per
    model call."""

    batch_size: int
    min_k: float | None = None
    moments: bool = False
    lowercase: bool = False

    @property
    def loss_only(self) -> ScoringPlan:
        return ScoringPlan(self.batch_size)


@dataclass(frozen=True, slots=True)
class _Piece:
    record: int  # index within the chunk
    start: int
    end: int
    scored_from: int  # first position (in the record) this piece scores


@dataclass(slots=True)
class ScoredChunks:
    """The per-record arrays of a range of one data set's chunks, chunk by chunk (joined
    into the statistics by :func:`joined_scores`)."""

    loss: list[FloatArray] = field(default_factory=list)
    tokens: list[NDArray[np.int64]] = field(default_factory=list)
    windows: list[NDArray[np.int64]] = field(default_factory=list)
    zlib_bytes: list[NDArray[np.int64]] = field(default_factory=list)
    min_k: list[FloatArray] = field(default_factory=list)
    min_k_plus_plus: list[FloatArray] = field(default_factory=list)
    lowercase: list[FloatArray] = field(default_factory=list)
    correct: int = 0
    long_rows: list[int] = field(default_factory=list)
    long_records: int = 0


def _pieces(lengths: Sequence[int], context: int) -> list[_Piece]:
    """Every record's windows (see the module docstring)."""
    stride = max(1, context // 2)
    pieces = []
    for record, n in enumerate(lengths):
        if n <= context:
            pieces.append(_Piece(record, 0, n, 1))
            continue
        start, scored = 0, 1
        while True:
            end = min(start + context, n)
            pieces.append(_Piece(record, start, end, scored))
            if end == n:
                break
            scored, start = end, start + stride
    return pieces


def _batches(pieces: list[_Piece], batch_size: int) -> Iterator[list[_Piece]]:
    """The pieces, longest first, in batches within ``batch_size`` and the token budget, cut
    where padding and calls cost least (:func:`_cuts`)."""
    ordered = sorted(pieces, key=lambda p: p.end - p.start, reverse=True)
    lengths = np.array([p.end - p.start for p in ordered], dtype=np.int64)
    cuts = _cuts(lengths, batch_size)
    for start, end in itertools.pairwise(cuts):
        yield ordered[start:end]


def _cuts(lengths: NDArray[np.int64], batch_size: int) -> list[int]:
    """Where to cut ``lengths`` (sorted longest first) into batches: the cuts
    ``0 = c_0 < … < c_m = n`` that minimise ``Σ_j (c_{j+1} − c_j)·lengths[c_j]`` (the padded
    tokens, each batch as wide as its first piece) ``+ m·CALL_COST`` (what a model call costs
    beyond its tokens), a batch holding at most ``batch_size`` pieces and :data:`TOKEN_BUDGET`
    padded tokens (one piece alone may be wider). Solved exactly by dynamic programming over
    the sorted lengths, ``O(n · batch_size)``: cutting every ``batch_size`` pieces instead
    padded 22 % more than the tokens on the benchmark's records (docs/text.md), where the
    optimal cuts pad 6 %."""
    n = lengths.size
    best = np.zeros(n + 1)
    previous = np.zeros(n + 1, dtype=np.int64)
    for end in range(1, n + 1):
        starts = np.arange(max(0, end - batch_size), end)
        rows = end - starts
        padded = rows * lengths[starts]
        cost = best[starts] + padded + CALL_COST
        cost[(padded > TOKEN_BUDGET) & (rows > 1)] = np.inf
        pick = int(np.argmin(cost))
        best[end], previous[end] = cost[pick], starts[pick]
    cuts = [n]
    while cuts[-1] > 0:
        cuts.append(int(previous[cuts[-1]]))
    return cuts[::-1]


@dataclass(slots=True)
class _Tokens:
    """One pass's scored tokens of a chunk's records, piece by piece."""

    log_probs: list[list[FloatArray]]
    mu: list[list[FloatArray]]
    sigma: list[list[FloatArray]]
    correct: int = 0


def _run(
    model: TextModel, ids: list[NDArray[np.int64]], context: int, plan: ScoringPlan
) -> tuple[_Tokens, list[_Piece]]:
    """Score every piece of the chunk's records; their tokens, in record and window order."""
    pieces = _pieces([len(x) for x in ids], context)
    found = _Tokens([[] for _ in ids], [[] for _ in ids], [[] for _ in ids])
    order = {id(p): i for i, p in enumerate(pieces)}
    parts: dict[int, tuple[FloatArray, FloatArray | None, FloatArray | None]] = {}
    for batch in _batches(pieces, plan.batch_size):
        width = batch[0].end - batch[0].start
        matrix = np.zeros((len(batch), width), dtype=np.int64)
        lengths = np.empty(len(batch), dtype=np.int64)
        for row, piece in enumerate(batch):
            n = piece.end - piece.start
            matrix[row, :n] = ids[piece.record][piece.start : piece.end]
            lengths[row] = n
        scores = model.score_tokens(matrix, lengths, moments=plan.moments)
        for row, piece in enumerate(batch):
            first = piece.scored_from - piece.start - 1  # index of the first scored position
            last = piece.end - piece.start - 1
            kept = slice(first, last)
            found.correct += int(np.count_nonzero(scores.correct[row, kept]))
            parts[order[id(piece)]] = (
                scores.log_probs[row, kept],
                None if scores.mu is None else scores.mu[row, kept],
                None if scores.sigma is None else scores.sigma[row, kept],
            )
    for index, piece in enumerate(pieces):
        log_probs, mu, sigma = parts[index]
        found.log_probs[piece.record].append(log_probs)
        if mu is not None and sigma is not None:
            found.mu[piece.record].append(mu)
            found.sigma[piece.record].append(sigma)
    return found, pieces


def _padded(rows: list[list[FloatArray]]) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Each record's concatenated values as a row of a padded array, with its mask."""
    joined = [np.concatenate(parts) for parts in rows]
    width = max(x.size for x in joined)
    values = np.zeros((len(joined), width))
    mask = np.zeros((len(joined), width), dtype=bool)
    for row, x in enumerate(joined):
        values[row, : x.size] = x
        mask[row, : x.size] = True
    return values, mask


def _refuse_short(path: Path, chunk: TextChunk, ids: list[NDArray[np.int64]]) -> None:
    short = [chunk.first_row + i for i, x in enumerate(ids) if x.size < 2]
    if short:
        shown = ", ".join(str(row) for row in short[:10])
        more = f" and {len(short) - 10} more" if len(short) > 10 else ""
        raise InvalidInputError(
            f"{path}: every text record needs at least 2 tokens (the first token of a record "
            f"is not predicted by the model). Found {len(short)} with fewer: rows {shown}{more}."
        )


def _tokens(
    model: TextModel, texts: Sequence[str], path: Path, first_row: int
) -> list[NDArray[np.int64]]:
    """The token ids of ``texts``, each checked against the model's vocabulary before any
    reaches the model (a tokenizer may hand out ids its model has no embedding for)."""
    ids = model.tokenize(texts)
    vocabulary = model.info.vocabulary
    for row, record in enumerate(ids):
        outside = record[(record < 0) | (record >= vocabulary)]
        if outside.size:
            raise InvalidInputError(
                f"{path}, row {first_row + row}: the model's tokenizer must give token ids "
                f"its embedding holds (0 to {vocabulary - 1:,}). Found the id "
                f"{int(outside[0]):,}."
            )
    return ids


def _score_chunk(
    model: TextModel, chunk: TextChunk, path: Path, plan: ScoringPlan, into: ScoredChunks
) -> None:
    context = model.info.context
    ids = _tokens(model, chunk.texts, path, chunk.first_row)
    _refuse_short(path, chunk, ids)
    tokens, pieces = _run(model, ids, context, plan)
    values, mask = _padded(tokens.log_probs)
    into.loss.append(mean_token_loss(values, mask))
    into.tokens.append(mask.sum(axis=1).astype(np.int64))
    windows = np.bincount([p.record for p in pieces], minlength=len(ids)).astype(np.int64)
    into.windows.append(windows)
    long = np.flatnonzero(windows > 1)
    into.long_records += int(long.size)
    into.long_rows += [chunk.first_row + int(i) for i in long[: max(0, 10 - len(into.long_rows))]]
    into.correct += tokens.correct
    into.zlib_bytes.append(
        np.array([len(zlib.compress(t.encode("utf-8"))) for t in chunk.texts], dtype=np.int64)
    )
    if plan.min_k is not None:
        into.min_k.append(min_k_percent(values, mask, plan.min_k))
        if plan.moments:
            mu, _ = _padded(tokens.mu)
            sigma, _ = _padded(tokens.sigma)
            into.min_k_plus_plus.append(min_k_plus_plus(values, mu, sigma, mask, plan.min_k))
    if plan.lowercase:
        lower = _tokens(model, [t.lower() for t in chunk.texts], path, chunk.first_row)
        lowered, _ = _run(model, lower, context, plan.loss_only)
        lower_values, lower_mask = _padded(lowered.log_probs)
        into.lowercase.append(mean_token_loss(lower_values, lower_mask))


def _joined(parts: list[FloatArray]) -> FloatArray | None:
    return np.concatenate(parts) if parts else None


def chunk_ranges(records: int) -> list[ChunkRange]:
    """One range of one chunk per :data:`TEXT_CHUNK_ROWS` records of a data set of
    ``records`` records; the last runs to the end, so that every chunk the file's reader
    gives is scored whatever its count."""
    count = max(1, -(-records // TEXT_CHUNK_ROWS))
    return [(index, index + 1) for index in range(count - 1)] + [(count - 1, None)]


def score_chunks(
    model: TextModel,
    path: Path,
    column: str | None,
    plan: ScoringPlan,
    *,
    chunks: ChunkRange = (0, None),
    progress: Progress | None = None,
) -> ScoredChunks:
    """The records of ``path``'s chunks ``chunks`` scored by ``model`` (see the module
    docstring); ``progress`` is told as chunks finish."""
    first, stop = chunks
    scored = ScoredChunks()
    for index, chunk in enumerate(_chunks(path, column)):
        if stop is not None and index >= stop:
            break
        if index >= first:
            _score_chunk(model, chunk, path, plan, scored)
            if progress is not None:
                progress.advance(len(chunk.texts))
    return scored


def joined_scores(
    parts: Sequence[ScoredChunks], context: int
) -> tuple[SequenceStatistics, WindowsUsed]:
    """The statistics of a data set whose chunks ``parts`` scored, in order, and the records
    that needed windows (``context`` tokens at most per window)."""

    def each(name: str) -> list[FloatArray]:
        return [array for part in parts for array in getattr(part, name)]

    statistics = SequenceStatistics(
        loss=np.concatenate(each("loss")),
        tokens=np.concatenate(each("tokens")),
        windows=np.concatenate(each("windows")),
        zlib_bytes=np.concatenate(each("zlib_bytes")),
        correct=sum(part.correct for part in parts),
        min_k=_joined(each("min_k")),
        min_k_plus_plus=_joined(each("min_k_plus_plus")),
        lowercase_loss=_joined(each("lowercase")),
    )
    long_rows = [row for part in parts for row in part.long_rows][:10]
    long_records = sum(part.long_records for part in parts)
    return statistics, WindowsUsed(context, max(1, context // 2), long_records, tuple(long_rows))


def score_text(
    model: TextModel,
    path: Path,
    column: str | None,
    plan: ScoringPlan,
    *,
    role: str,
    progress: Progress | None = None,
    records: int | None = None,
) -> tuple[SequenceStatistics, WindowsUsed]:
    """Every record of ``path`` scored by ``model`` (see the module docstring), and the
    records that needed windows; ``progress`` is told as chunks finish, out of ``records``
    (the count of the file's scan)."""
    if progress is not None:
        progress.start(role, path, records)
    scored = score_chunks(model, path, column, plan, progress=progress)
    return joined_scores([scored], model.info.context)


def _chunks(path: Path, column: str | None) -> Iterable[TextChunk]:
    return iter_text_chunks(path, column, chunk_rows=TEXT_CHUNK_ROWS)
