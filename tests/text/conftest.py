"""The tiny language models of the text tests, built once per test session (:mod:`tiny_lm`).

Every test here needs the ``[text]`` extra (transformers, tokenizers, safetensors) and is
skipped cleanly without it. The Hugging Face loader is registered by hand when the installed
distribution does not list it yet (an editable install made before the loader existed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent))

from tiny_lm import TinyCorpus, build


@pytest.fixture(scope="session", autouse=True)
def huggingface_loader() -> None:
    """The ``huggingface`` loader, known to the plugin registry."""
    from epsstar.audit.model.plugins import available_loaders, register_loader
    from epsstar.loaders.huggingface import HuggingFaceLoader

    if "huggingface" not in available_loaders():
        register_loader("huggingface", HuggingFaceLoader)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> TinyCorpus:
    """A tiny GPT-2 fine-tuned until its 120 training records leak, beside 120 population
    records from the same generator."""
    import torch

    torch.set_num_threads(1)  # the model is tiny: threads only contend on a shared machine
    return build(tmp_path_factory.mktemp("tiny-lm"), epochs=12)


@pytest.fixture(scope="session")
def untrained(corpus: TinyCorpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same architecture and tokenizer, never trained (random weights)."""
    from tiny_lm import tiny_model
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("untrained") / "model"
    tokenizer = AutoTokenizer.from_pretrained(corpus.model)
    tiny_model(len(tokenizer), seed=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
