"""The Hugging Face loader: a padded batch scores as each sequence alone, the Min-K%++
moments match the numpy formula, a trusted pickle folder reads the same model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_lm import TinyCorpus, copy_model
from token_tolerances import token_tolerances, whole_path

from epsstar.exceptions import InvalidInputError
from epsstar.loaders.huggingface import HuggingFaceLoader
from epsstar.statistics.attacks.text_scores import vocabulary_moments


@pytest.mark.kernels
def test_a_padded_batch_scores_like_each_sequence_alone(corpus: TinyCorpus) -> None:
    model = HuggingFaceLoader().load(corpus.model)
    ids = model.tokenize(corpus.population_texts[:4])
    width = max(len(x) for x in ids)
    matrix = np.zeros((len(ids), width), dtype=np.int64)
    for row, x in enumerate(ids):
        matrix[row, : len(x)] = x
    lengths = np.array([len(x) for x in ids])
    batch = model.score_tokens(matrix, lengths, moments=True)
    assert batch.mu is not None
    for row, x in enumerate(ids):
        alone = model.score_tokens(x[None, :], lengths[row : row + 1], moments=True)
        assert alone.mu is not None
        n = len(x) - 1
        # float32 matmuls of a different batch shape: two evaluations of the whole path
        token = token_tolerances(model._model, x, whole_path(model._model, x.size), softmaxes=2)
        found = np.abs(batch.log_probs[row, :n] - alone.log_probs[0])
        np.testing.assert_array_less(found, token.log_prob)
        np.testing.assert_array_less(np.abs(batch.mu[row, :n] - alone.mu[0]), token.mu_tolerance)


def test_the_moments_match_numpy_on_the_model_s_own_distribution(corpus: TinyCorpus) -> None:
    import torch

    model = HuggingFaceLoader().load(corpus.model)
    ids = model.tokenize(corpus.train_texts[:1])[0][None, :]
    scores = model.score_tokens(ids, np.array([ids.shape[1]]), moments=True)
    with torch.inference_mode():
        logits = model._model(input_ids=torch.from_numpy(ids)).logits[:, :-1].double()
    mu, sigma = vocabulary_moments(torch.log_softmax(logits, -1).numpy())
    # the same logits: the loader's float32 log-softmax against float64 here
    token = token_tolerances(model._model, ids[0], 0, softmaxes=1)
    np.testing.assert_array_less(np.abs(scores.mu[0] - mu[0]), token.mu_tolerance)
    np.testing.assert_array_less(np.abs(scores.sigma[0] - sigma[0]), token.sigma_tolerance)


def test_a_trusted_pickle_folder_reads_the_same_model(corpus: TinyCorpus, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    folder = copy_model(corpus, tmp_path / "pickled", without=("model.safetensors",))
    torch.save(load_file(corpus.model / "model.safetensors"), folder / "pytorch_model.bin")
    with pytest.raises(InvalidInputError, match="pickle"):
        HuggingFaceLoader().load(folder)
    trusted = HuggingFaceLoader().load(folder, trust=True)
    safe = HuggingFaceLoader().load(corpus.model)
    ids = safe.tokenize(corpus.train_texts[:1])[0][None, :]
    lengths = np.array([ids.shape[1]])
    np.testing.assert_array_equal(
        trusted.score_tokens(ids, lengths, moments=False).log_probs,
        safe.score_tokens(ids, lengths, moments=False).log_probs,
    )
