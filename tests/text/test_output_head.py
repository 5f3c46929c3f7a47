"""The output layer applied to the scored positions only, and the batches cut where padding
and model calls cost least, score every record as the model's whole output read record by
record does."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_lm import TinyCorpus
from token_tolerances import token_tolerances, whole_path

from epsstar.audit.engines.text_scoring import (
    CALL_COST,
    TOKEN_BUDGET,
    ScoringPlan,
    _cuts,
    score_text,
)
from epsstar.loaders.huggingface import HuggingFaceLoader
from epsstar.loaders.huggingface.model import split_head
from epsstar.statistics.attacks.text_scores import vocabulary_moments


def _padded(ids: list[Any]) -> tuple[Any, Any]:
    width = max(len(x) for x in ids)
    matrix = np.zeros((len(ids), width), dtype=np.int64)
    for row, x in enumerate(ids):
        matrix[row, : len(x)] = x
    return matrix, np.array([len(x) for x in ids])


def test_the_split_head_scores_as_the_model_s_whole_output(corpus: TinyCorpus) -> None:
    import torch

    model = HuggingFaceLoader().load(corpus.model)
    assert model._head is not None  # a GPT-2 is its body and its output layer
    whole = HuggingFaceLoader().load(corpus.model)
    whole._head = None  # the path that reads the model's whole output
    matrix, lengths = _padded(model.tokenize(corpus.population_texts[:16]))
    split = model.score_tokens(matrix, lengths, moments=True)
    read = whole.score_tokens(matrix, lengths, moments=True)
    with torch.inference_mode():
        logits = model._model(input_ids=torch.from_numpy(matrix)).logits[:, :-1].double()
    log_p = torch.log_softmax(logits, -1).numpy()
    mu, sigma = vocabulary_moments(log_p)
    targets = matrix[:, 1:]
    expected = np.take_along_axis(log_p, targets[..., None], -1)[..., 0]
    gpt2 = model._model
    for row, n in enumerate(lengths - 1):
        # the output layer summed again (its width) and one float32 log-softmax, against
        # float64 on the whole output's logits (another position or token is off by > 0.01)
        token = token_tolerances(gpt2, matrix[row, : n + 1], gpt2.config.n_embd, softmaxes=1)
        for found in (split, read):
            assert found.mu is not None
            assert found.sigma is not None
            for got, want, tolerance in (
                (found.log_probs, expected, token.log_prob),
                (found.mu, mu, token.mu_tolerance),
                (found.sigma, sigma, token.sigma_tolerance),
            ):
                np.testing.assert_array_less(np.abs(got[row, :n] - want[row, :n]), tolerance)
            np.testing.assert_array_equal(
                found.correct[row, :n], log_p[row, :n].argmax(-1) == targets[row, :n]
            )


def test_a_model_whose_logits_are_more_than_its_output_layer_is_read_whole(
    corpus: TinyCorpus,
) -> None:
    from transformers import GPT2LMHeadModel

    plain = GPT2LMHeadModel.from_pretrained(corpus.model).eval()
    scaled = GPT2LMHeadModel.from_pretrained(corpus.model).eval()
    forward = scaled.forward

    def doubled(*args: Any, **kwargs: Any) -> Any:  # logits scaled after the output layer
        out = forward(*args, **kwargs)
        out.logits = out.logits * 2.0
        return out

    scaled.forward = doubled
    vocabulary = plain.config.vocab_size
    assert split_head(plain, 64, vocabulary) is not None
    assert split_head(scaled, 64, vocabulary) is None


def _cost(lengths: list[int], cuts: list[int]) -> float:
    return sum(
        (end - start) * lengths[start] + CALL_COST for start, end in itertools.pairwise(cuts)
    )


def _allowed(lengths: list[int], cuts: list[int], batch_size: int) -> bool:
    return all(
        end - start <= batch_size
        and (end - start == 1 or (end - start) * lengths[start] <= TOKEN_BUDGET)
        for start, end in itertools.pairwise(cuts)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(2, 3000), min_size=1, max_size=9),
    st.integers(1, 5),
)
def test_the_cuts_cost_least_of_all_allowed_cuts(raw: list[int], batch_size: int) -> None:
    lengths = sorted(raw, reverse=True)
    n = len(lengths)
    cuts = _cuts(np.array(lengths, dtype=np.int64), batch_size)
    assert (cuts[0], cuts[-1]) == (0, n)
    assert _allowed(lengths, cuts, batch_size)
    every = [
        [0, *inner, n]
        for size in range(n)
        for inner in itertools.combinations(range(1, n), size)
        if _allowed(lengths, [0, *inner, n], batch_size)
    ]
    assert _cost(lengths, cuts) == min(_cost(lengths, other) for other in every)


def _derived_tolerances(model: Any, texts: list[str]) -> dict[str, Any]:
    """Per record, how far each score may move between two float32 evaluations of ``model``
    on the whole path (``tests/numerics.py``, point 4); ``"correct"`` is how many predicted
    tokens sit on a knife's edge."""
    gpt2 = model._model
    found: dict[str, Any] = {"loss": [], "min_k": [], "min_k_plus_plus": [], "lowercase_loss": []}
    edges = 0
    for text in texts:
        ids, lower = model.tokenize([text, text.lower()])
        assert max(ids.size, lower.size) <= gpt2.config.n_positions  # one window per record
        token = token_tolerances(gpt2, ids, whole_path(gpt2, ids.size), softmaxes=2)
        lowered = token_tolerances(gpt2, lower, whole_path(gpt2, lower.size), softmaxes=2)
        found["loss"].append(token.log_prob.mean())
        found["lowercase_loss"].append(lowered.log_prob.mean())
        # the mean of the k lowest values moves by at most the largest move
        found["min_k"].append(token.log_prob.max())
        found["min_k_plus_plus"].append(token.standardised.max())
        edges += token.knife_edges
    return {name: np.array(values) for name, values in found.items()} | {"correct": edges}


@pytest.mark.kernels
def test_batches_score_each_record_as_it_scores_alone(corpus: TinyCorpus) -> None:
    model = HuggingFaceLoader().load(corpus.model)
    plan = ScoringPlan(64, min_k=0.2, moments=True, lowercase=True)
    batched, _ = score_text(model, corpus.train, "text", plan, role="train")
    alone, _ = score_text(
        model, corpus.train, "text", ScoringPlan(1, 0.2, True, True), role="train"
    )
    # float32 matmuls of other batch shapes sum in other orders: each score within the
    # tolerance its arithmetic allows, record by record
    tolerance = _derived_tolerances(model, corpus.train_texts)
    for name in ("loss", "min_k", "min_k_plus_plus", "lowercase_loss"):
        found, expected = getattr(batched, name), getattr(alone, name)
        np.testing.assert_array_less(np.abs(found - expected), tolerance[name], err_msg=name)
    np.testing.assert_array_equal(batched.tokens, alone.tokens)
    assert abs(batched.correct - alone.correct) <= tolerance["correct"]
