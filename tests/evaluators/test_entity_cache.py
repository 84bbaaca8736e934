"""The NER reads a text once per cache folder: its entities are kept on disk
(``<cache_dir>/entities.sqlite``), read back by another process without loading the model, and not reused
under another model identity."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruwikibench.evaluators import entities
from ruwikibench.models.cache import EntityCache

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Пётр Первый основал Санкт-Петербург на Неве.",
    "Москва и Тверь спорили за Владимир.",
    "В комнате было тихо.",
]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A disk cache of its own for this test (the process's store and memory restored after it)."""
    monkeypatch.setattr(entities, "_store", None)
    entities.forget_in_memory()
    entities.use_cache_dir(tmp_path)
    yield tmp_path
    entities.forget_in_memory()


def _sets() -> list[list[str]]:
    return [sorted(entities.entity_set(text)) for text in TEXTS]


def test_a_second_process_reads_the_entities_from_disk_without_the_model(store: Path) -> None:
    before = entities.ner_texts()
    here = _sets()
    assert entities.ner_texts() - before == len(TEXTS)  # the model read each text once
    assert len(EntityCache(store / entities.CACHE_FILE)) == len(TEXTS)
    code = (
        "import json, sys; import ruwikibench.evaluators.entities as e; e.use_cache_dir(sys.argv[1]); "
        f"sets = [sorted(e.entity_set(t)) for t in {TEXTS!r}]; "
        "print(json.dumps({'sets': sets, 'read': e.ner_texts(), 'loaded': e._model is not None}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(store)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    there = json.loads(out.stdout)
    assert there == {"sets": here, "read": 0, "loaded": False}
    assert here[0] == [
        "нева",
        "петр первый",
        "санкт-петербург",
    ]  # the entities themselves, as the model gave them


def test_the_same_process_after_forgetting_its_memory_reads_the_disk(store: Path) -> None:
    first = _sets()
    entities.forget_in_memory()
    before = entities.ner_texts()
    assert _sets() == first
    assert entities.ner_texts() == before


def test_another_model_identity_reads_nothing_stored(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _sets()
    entities.forget_in_memory()
    monkeypatch.setattr(entities, "model_identity", lambda: "another model")
    before = entities.ner_texts()
    assert _sets() == first
    assert entities.ner_texts() - before == len(
        TEXTS
    )  # read again: nothing stored under the old identity is used
    assert len(EntityCache(store / entities.CACHE_FILE)) == 2 * len(TEXTS)


def test_the_identity_follows_the_model_files_and_the_normalization(monkeypatch: pytest.MonkeyPatch) -> None:
    entities.model_identity.cache_clear()
    try:
        now = entities.model_identity()
        assert now == entities.model_identity() and len(now) == 64
        monkeypatch.setattr(entities, "NORMALIZATION_VERSION", entities.NORMALIZATION_VERSION + 1)
        entities.model_identity.cache_clear()
        assert entities.model_identity() != now
        monkeypatch.undo()
        monkeypatch.setattr(
            entities, "NER_FILE", "model/slovnet_morph_news_v1.tar"
        )  # another file of the wheel
        entities.model_identity.cache_clear()
        assert entities.model_identity() != now
    finally:
        monkeypatch.undo()
        entities.model_identity.cache_clear()


def test_without_a_cache_folder_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities, "_store", None)
    entities.forget_in_memory()
    before = entities.ner_texts()
    _sets()
    assert entities.ner_texts() - before == len(TEXTS)
    assert not list(tmp_path.iterdir())
    entities.forget_in_memory()


def test_prefetch_reads_new_texts_in_one_pass_with_the_same_entities(store: Path) -> None:
    one_by_one = [tuple(entities.extract_entities(text)) for text in TEXTS]
    entities.forget_in_memory()
    for path in store.glob("entities.sqlite*"):
        path.unlink()
    entities.use_cache_dir(None)
    before = entities.ner_texts()
    entities.prefetch_entities([*TEXTS, TEXTS[0], "   "])  # repeats and blanks read once / not at all
    assert entities.ner_texts() - before == len(TEXTS)
    assert [tuple(entities.extract_entities(text)) for text in TEXTS] == one_by_one
    assert entities.ner_texts() - before == len(TEXTS)  # the look-ups found them in memory
    entities.prefetch_entities(TEXTS)
    assert entities.ner_texts() - before == len(TEXTS)  # known texts are not read again


def test_prefetch_skips_texts_on_disk_and_keeps_what_it_reads_there(store: Path) -> None:
    entities.prefetch_entities(TEXTS[:2])
    assert len(EntityCache(store / entities.CACHE_FILE)) == 2
    entities.forget_in_memory()
    before = entities.ner_texts()
    entities.prefetch_entities(TEXTS)  # two from disk, one read
    assert entities.ner_texts() - before == 1
    assert len(EntityCache(store / entities.CACHE_FILE)) == 3


def test_memory_keeps_the_most_recent_texts(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities, "KNOWN_TEXTS", 2)
    entities.use_cache_dir(None)
    before = entities.ner_texts()
    for text in TEXTS:
        entities.entity_set(text)
    entities.entity_set(TEXTS[2])  # kept
    assert entities.ner_texts() - before == 3
    entities.entity_set(TEXTS[0])  # dropped as the third came in: read again
    assert entities.ner_texts() - before == 4


def test_a_batch_of_mixed_lengths_gives_each_text_its_own_entities(store: Path) -> None:
    """The pass runs shortest first: each text must still get its own entities, in the order given."""
    entities.use_cache_dir(None)
    texts = [TEXTS[0] * 6, TEXTS[2], TEXTS[1] * 3, TEXTS[0], TEXTS[1]]
    batched = entities._run_model(texts)
    entities.forget_in_memory()
    assert batched == [entities._run_model([text])[0] for text in texts]
    assert batched[3] and batched[2] != batched[3]
