"""``package:relative/path`` names a prompt file shipped inside an importable package (how plug-ins name
theirs)."""

from __future__ import annotations

import hashlib

import pytest

from ruwikibench.prompts import PACKAGE_PROMPTS, PromptLibrary


def test_a_package_prompt_resolves_inside_the_package_and_is_hashed() -> None:
    library = PromptLibrary()
    prompt = library.get("ruwikibench.prompts:ru/relevance.txt")
    assert prompt.path == PACKAGE_PROMPTS / "ru" / "relevance.txt"
    assert (
        prompt.sha256
        == hashlib.sha256(prompt.text.encode()).hexdigest()
        == library.get("ru/relevance.txt").sha256
    )
    assert library.hashes()["ruwikibench.prompts:ru/relevance.txt"] == prompt.sha256


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ruwikibench.prompts:ru/nope.txt", "no ru/nope.txt in"),
        ("no_such_package_x:prompt.txt", "no importable package 'no_such_package_x'"),
    ],
)
def test_a_missing_package_prompt_is_one_clear_error(name: str, message: str) -> None:
    with pytest.raises(FileNotFoundError, match=message):
        PromptLibrary().resolve(name)
