"""Fixtures of the web corpus-builder tests: a live local HTTP server and a page generator."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.corpus_builder.web._server import LocalServer, article_html, running_server


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with running_server() as state:
        yield state


@pytest.fixture
def make_article() -> Callable[..., str]:
    return article_html
