"""The ``stub_server`` fixture: the tests' fake OpenAI-compatible server (tests/fake_openai.py), per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai import StubServer, serving


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    with serving(StubServer()) as stub:
        yield stub
