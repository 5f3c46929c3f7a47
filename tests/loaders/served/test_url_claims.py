"""Loaders claim URLs by their schemes, as they claim files by their suffixes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.model import plugins
from epsstar.audit.model.plugins import loader_for_url, register_loader
from epsstar.audit.run import ModelFile
from epsstar.exceptions import InvalidInputError
from epsstar.loaders.served import ServedLoader


@pytest.fixture
def registry() -> Iterator[None]:
    """A registry with the served loader, left as the entry points make it."""
    plugins._reset()
    if "served" not in plugins.available_loaders():
        register_loader("served", ServedLoader)
    yield
    plugins._reset()


class OtherHttp:
    name = "other"
    suffixes: tuple[str, ...] = ()
    schemes = ("http",)

    def load(self, path: Path, **options: Any) -> None: ...

    def load_url(self, url: str, **options: Any) -> None: ...


@pytest.mark.usefixtures("registry")
@pytest.mark.parametrize("url", ["http://h:1/v2/models/m", "HTTPS://h/x"])
def test_the_served_loader_claims_http_and_https(url: str) -> None:
    loader, info = loader_for_url(url)
    assert isinstance(loader, ServedLoader)
    assert info.name == "served"


@pytest.mark.usefixtures("registry")
def test_an_unclaimed_scheme_lists_the_loaders_of_urls() -> None:
    with pytest.raises(InvalidInputError, match=r"claims \(served \(http, https\)\)\. Found 'ftp'"):
        loader_for_url("ftp://h/model")


@pytest.mark.usefixtures("registry")
def test_a_scheme_claimed_twice_names_both() -> None:
    register_loader("other", OtherHttp)
    with pytest.raises(InvalidInputError, match="Found 'http', claimed by other, served"):
        loader_for_url("http://h/x")
    loader, _ = loader_for_url("https://h/x")
    assert isinstance(loader, ServedLoader)


def test_schemes_need_load_url() -> None:
    class NoLoadUrl:
        name = "no-load-url"
        suffixes: tuple[str, ...] = ()
        schemes = ("grpc",)

        def load(self, path: Path, **options: Any) -> None: ...

    with pytest.raises(InvalidInputError, match=r"a callable 'load_url\(url"):
        register_loader("no-load-url", NoLoadUrl)


@pytest.mark.usefixtures("registry")
def test_a_file_loader_named_for_a_url_is_refused() -> None:
    model = ModelFile(Path(), loader="sklearn", url="http://u:p@h:1/v2/models/m?t=x")
    with pytest.raises(InvalidInputError) as error:
        model.load()
    assert str(error.value) == (
        "the sklearn loader reads files, not served models; name a loader of URLs or none. "
        "Found the URL 'http://h:1/v2/models/m'."
    )


def test_the_served_loader_refuses_a_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not files. Found the file"):
        ServedLoader().load(tmp_path / "model.onnx")
