"""Named-entity recall and precision of a generated text against its reference (STORM reports entity recall).

The NER is slovnet's Russian news NER (PER / LOC / ORG) over navec embeddings, the models that the ``natasha``
wheel ships under ``natasha/data`` (no hub). Only the files are used: ``natasha`` itself is never imported (its
package imports pymorphy2, which may not run on Python 3.11). The model is loaded lazily, once per process,
under a lock; :func:`extract_entities` caches its result per text.

An entity's normalized form is the pymorphy3 lemma (a proper-name reading preferred) of each of its word tokens, lowercased, ё folded to е,
joined by spaces: «Москве» and «Москву» → «москва», «Петра Первого» → «петр первый». Matching compares
normalized forms only, not types (the NER may call a country LOC in one sentence and ORG in another).

:func:`entity_scores` compares the SETS of normalized forms (R = reference, G = generated):

- ``entity_recall`` = |R ∩ G| / |R|; ``entity_precision`` = |R ∩ G| / |G|;
  ``entity_f1`` = 2 |R ∩ G| / (|R| + |G|) (the harmonic mean of P and R when both are defined; 0 when G is empty);
- no entity in the reference: recall is undefined and the item gets NO entity key (it is not averaged);
- no entity in the generated text (the reference has some): recall 0, f1 0, ``entity_precision`` absent.

The runner averages each key over the items that have it, so ``n`` of each estimate says how many took part.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ruwikibench.evaluators.lexical import _morph

EntityType = Literal["PER", "LOC", "ORG"]
KEYS = ("entity_recall", "entity_precision", "entity_f1")
EMBEDDING_FILE = "emb/navec_news_v1_1B_250K_300d_100q.tar"
NER_FILE = "model/slovnet_ner_news_v1.tar"
PROPER = frozenset({"Name", "Surn", "Patr", "Geox", "Orgn", "Trad"})

_lock = threading.Lock()
_model: Any = None


@dataclass(frozen=True)
class Entity:
    """One entity mention: its type, the text as written and its normalized form (the key for matching)."""

    type: EntityType
    text: str
    normal: str


def model_dir() -> Path:
    """``natasha/data`` of the installed natasha wheel, found without importing natasha."""
    spec = importlib.util.find_spec("natasha")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("entity metrics need the 'natasha' package (its wheel ships the NER model files)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _load() -> Any:
    from navec import Navec
    from slovnet import NER

    data = model_dir()
    ner = NER.load(str(data / NER_FILE))
    ner.navec(Navec.load(str(data / EMBEDDING_FILE)))
    return ner


def ner_model() -> Any:
    """The slovnet NER with its navec embeddings, loaded on first use (once per process, thread-safe)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = _load()
    return _model


def fold(text: str) -> str:
    return text.lower().replace("ё", "е")


@lru_cache(maxsize=100_000)
def name_lemma(word: str) -> str:
    """The pymorphy3 normal form of a lowercase word of a name: the first parse tagged as a proper name
    (first name, surname, patronymic, place, organisation) when there is one, else the first parse
    («христиан» → «христиана» as «Христиана», not «христианин»)."""
    if not any("а" <= ch <= "я" or ch == "ё" for ch in word):
        return word
    parses = _morph().parse(word)
    proper = [p for p in parses if PROPER & p.tag.grammemes]
    return str((proper or parses)[0].normal_form)


def normalize_entity(text: str) -> str:
    """Lemmas of the word tokens of an entity, lowercased, ё → е, joined by single spaces."""
    # not at the top: the stage modules import this module before a run's first request
    from razdel import tokenize as razdel_tokenize

    words = [fold(t.text) for t in razdel_tokenize(text)]
    return " ".join(fold(name_lemma(w)) for w in words if any(ch.isalnum() for ch in w))


@lru_cache(maxsize=4096)
def _extract(text: str) -> tuple[Entity, ...]:
    if not text.strip():
        return ()
    model = ner_model()
    with _lock:  # one inference at a time: the model object is shared between scoring threads
        markup = model(text)
    found = []
    for span in markup.spans:
        surface = text[span.start:span.stop]
        normal = normalize_entity(surface)
        if normal:
            found.append(Entity(type=span.type, text=surface, normal=normal))
    return tuple(found)


def extract_entities(text: str) -> list[Entity]:
    """Every PER / LOC / ORG mention in ``text``, in order (cached per text)."""
    return list(_extract(text))


def entity_set(text: str) -> set[str]:
    """The normalized forms of the entities of ``text``."""
    return {e.normal for e in _extract(text)}


def set_scores(generated: set[str], reference: set[str]) -> dict[str, float]:
    """Entity R / P / F1 over two sets of normalized forms (conventions in the module docstring)."""
    if not reference:
        return {}
    shared = len(generated & reference)
    scores = {"entity_recall": shared / len(reference),
              "entity_f1": 2 * shared / (len(reference) + len(generated))}
    if generated:
        scores["entity_precision"] = shared / len(generated)
    return scores


def headings_text(headings: Sequence[str]) -> str:
    """Headings as one text for the NER, each a sentence of its own («Ранние годы. Москва.»): joined by newlines
    alone, the NER reads a run of capitalized headings as one long name."""
    return " ".join(f"{h.strip().rstrip('.')}." for h in headings if h.strip())


def entity_scores(generated_text: str, reference_text: str) -> dict[str, float]:
    """Entity recall, precision and F1 of ``generated_text`` against ``reference_text`` (see module docstring)."""
    reference = entity_set(reference_text)
    if not reference:
        return {}
    return set_scores(entity_set(generated_text), reference)
