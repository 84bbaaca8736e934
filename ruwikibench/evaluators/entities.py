"""Named-entity recall and precision of a generated text against its reference (STORM reports entity recall).

The NER is slovnet's Russian news NER (PER / LOC / ORG) over navec embeddings, the models that the ``natasha``
wheel ships under ``natasha/data`` (no hub). Only the files are used: ``natasha`` itself is never imported
(its package imports pymorphy2, which may not run on Python 3.11). The model is loaded lazily, once per
process, under a lock.

The NER reads a text once: :func:`extract_entities` keeps its result in memory, and on disk when a run has set
a cache folder (:func:`use_cache_dir`; ``build_context`` sets the config's ``cache_dir``):
``<cache_dir>/entities.sqlite`` keyed by :func:`model_identity` and the sha256 of the text. So a text's
entities are computed once per cache folder — by the unit's scoring, its baselines, floors, ``score``,
``merge`` and later runs, in any process — and the model is not even loaded when every text is found there.
Another model or normalization (other files, other package versions, :data:`NORMALIZATION_VERSION`) is another
identity: nothing stored under the old one is read.

**Sentence-initial common nouns are not entities.** The NER takes a capitalized word for a name, and the first
word of every sentence is capitalized: «Аккрецией называют…», «Решением суда…», «Интерпретатор читает…»
came out as entities — and whether they did depended on the neighbouring sentences, so reordering a text's
sentences could turn an item's entity recall from 100 to 0. A single-word mention that starts a sentence and
is a common noun — pymorphy3's most probable parse a noun, and none of its parses a name, surname,
patronymic, place, organisation, trade mark or abbreviation (:func:`is_common_noun`; «Москва», «Волга» have
one) — is dropped. Whether a word starts its sentence does not depend on the order of the sentences. The same
word inside a sentence, capitalized, is kept («в Сенате»): there the capital is evidence of a name.

An entity's normalized form is the pymorphy3 lemma (a proper-name reading preferred) of each of its word
tokens, lowercased, ё folded to е, joined by spaces: «Москве» and «Москву» → «москва», «Петра Первого» → «петр
первый». Matching compares normalized forms only, not types (the NER may call a country LOC in one sentence
and ORG in another).

:func:`entity_scores` compares the SETS of normalized forms (R = reference, G = generated):

- ``entity_recall`` = |R ∩ G| / |R|; ``entity_precision`` = |R ∩ G| / |G|;
  ``entity_f1`` = 2 |R ∩ G| / (|R| + |G|) (the harmonic mean of P and R when both are defined; 0 when G is
  empty);
- no entity in the reference: recall is undefined and the item gets NO entity key (it is not averaged);
- no entity in the generated text (the reference has some): recall 0, f1 0, ``entity_precision`` absent.

The runner averages each key over the items that have it, so ``n`` of each estimate says how many took part.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ruwikibench.evaluators.lexical import _morph
from ruwikibench.models.cache import EntityCache, stable_hash

EntityType = Literal["PER", "LOC", "ORG"]
KEYS = ("entity_recall", "entity_precision", "entity_f1")
EMBEDDING_FILE = "emb/navec_news_v1_1B_250K_300d_100q.tar"
NER_FILE = "model/slovnet_ner_news_v1.tar"
PROPER = frozenset({"Name", "Surn", "Patr", "Geox", "Orgn", "Trad"})
NAME_LIKE = PROPER | {"Abbr"}
"""Grammemes of a parse that make a word a possible name (:func:`is_common_noun`)."""
NORMALIZATION_VERSION = 2
"""Bump when normalize_entity, the entities kept or the stored form change: stored entities are not reused.
2: sentence-initial common nouns dropped (:func:`is_common_noun`)."""
IDENTITY_PACKAGES = ("slovnet", "navec", "pymorphy3", "pymorphy3-dicts-ru", "razdel")
CACHE_FILE = "entities.sqlite"

_lock = threading.Lock()
_model: Any = None
_read = [0]  # texts the NER model read in this process (:func:`ner_texts`)
_stores: dict[Path, EntityCache] = {}
_stores_lock = threading.Lock()
_store: EntityCache | None = None


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


def _package_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def model_identity() -> str:
    """What decides the entities of a text, hashed: the sha256 of the NER's and navec's files, the versions of
    slovnet, navec, pymorphy3 (and its dictionary) and razdel, and :data:`NORMALIZATION_VERSION`."""
    data = model_dir()
    files = {
        name: hashlib.sha256((data / name).read_bytes()).hexdigest() for name in (NER_FILE, EMBEDDING_FILE)
    }
    packages = {name: _package_version(name) for name in IDENTITY_PACKAGES}
    return stable_hash({"files": files, "packages": packages, "normalization": NORMALIZATION_VERSION})


def use_cache_dir(cache_dir: str | Path | None) -> None:
    """Keep the entities of every text read from now on in ``<cache_dir>/entities.sqlite`` too (shared with
    other processes); ``None``: in memory only. One folder per process at a time (the last call wins)."""
    global _store
    if cache_dir is None:
        _store = None
        return
    path = Path(cache_dir).expanduser() / CACHE_FILE
    with _stores_lock:
        if path not in _stores:
            _stores[path] = EntityCache(path)
        _store = _stores[path]


def forget_in_memory() -> None:
    """Drop the entities kept in this process's memory (the disk cache stays): as a new process would
    start."""
    with _known_lock:
        _known.clear()


def ner_texts() -> int:
    """How many texts the NER model read in this process (cache hits are not counted)."""
    return _read[0]


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


KNOWN_TEXTS = 4096
"""Texts whose entities are kept in memory (the most recently used)."""
_known: OrderedDict[str, tuple[Entity, ...]] = OrderedDict()
_known_lock = threading.Lock()


def _extract(text: str) -> tuple[Entity, ...]:
    """The entities of ``text``: from memory, the disk cache, or the NER (then kept in both)."""
    if not text.strip():
        return ()
    found = _in_memory(text)
    if found is None:
        key = _text_key(text)
        found = _stored(key)
        if found is None:
            found = _run_model([text])[0]
            _store_put(key, found)
        _remember(text, found)
    return found


def prefetch_entities(texts: Sequence[str]) -> None:
    """Read the entities of those ``texts`` not known yet in one pass of the NER over all of them (slovnet's
    batches, by length: ~40 % less CPU per text than one text at a time, and the same spans), so the look-ups
    that follow find them in memory. A scorer calls it with the texts of a unit before scoring them one by
    one."""
    todo: dict[str, str] = {}  # text -> its disk cache key
    for text in dict.fromkeys(t for t in texts if t.strip()):
        if _in_memory(text) is not None:
            continue
        key = _text_key(text)
        stored = _stored(key)
        if stored is None:
            todo[text] = key
        else:
            _remember(text, stored)
    for (text, key), found in zip(todo.items(), _run_model(list(todo)) if todo else [], strict=True):
        _store_put(key, found)
        _remember(text, found)


def _in_memory(text: str) -> tuple[Entity, ...] | None:
    with _known_lock:
        found = _known.get(text)
        if found is not None:
            _known.move_to_end(text)
        return found


def _remember(text: str, found: tuple[Entity, ...]) -> None:
    with _known_lock:
        _known[text] = found
        _known.move_to_end(text)
        while len(_known) > KNOWN_TEXTS:
            _known.popitem(last=False)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stored(key: str) -> tuple[Entity, ...] | None:
    store = _store
    if store is None:
        return None
    stored = store.get(model_identity(), key)
    if stored is None:
        return None
    return tuple(Entity(type=kind, text=surface, normal=normal) for kind, surface, normal in stored)  # type: ignore[arg-type]


def _store_put(key: str, found: tuple[Entity, ...]) -> None:
    store = _store
    if store is not None:
        store.put(model_identity(), key, [[e.type, e.text, e.normal] for e in found])


def _run_model(texts: list[str]) -> list[tuple[Entity, ...]]:
    """The entities of each of ``texts`` (none blank), in one pass of the NER over all of them, shortest
    first: slovnet pads each batch of 8 to its longest text, so texts of mixed lengths in arrival order cost
    40 % more than one at a time, and sorted by length 40 % less (80 section-like texts of 150–5,000
    characters)."""
    model = ner_model()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    with _lock:  # one inference at a time: the model object is shared between scoring threads
        markups = list(model.map([texts[i] for i in order]))
        _read[0] += len(texts)
    found: list[tuple[Entity, ...]] = [()] * len(texts)
    for i, markup in zip(order, markups, strict=True):
        found[i] = _entities(texts[i], markup)
    return found


def _entities(text: str, markup: Any) -> tuple[Entity, ...]:
    mentions = []
    for span in markup.spans:
        surface = text[span.start : span.stop]
        normal = normalize_entity(surface)
        if normal:
            mentions.append((span, surface, normal))
    doubtful = _sentence_initial_common_nouns(text, [(span.start, surface) for span, surface, _ in mentions])
    named_elsewhere = {
        word for i, (_, _, normal) in enumerate(mentions) if i not in doubtful for word in normal.split()
    }
    return tuple(
        Entity(type=span.type, text=surface, normal=normal)
        for i, (span, surface, normal) in enumerate(mentions)
        if i not in doubtful or normal in named_elsewhere
    )


def _sentence_initial_common_nouns(text: str, mentions: list[tuple[int, str]]) -> set[int]:
    """Indices of the ``(start, surface)`` mentions that are one common noun starting a sentence."""
    doubtful: set[int] = set()
    starts: set[int] | None = None  # where the text's sentences start: computed when a mention needs it
    for index, (start, surface) in enumerate(mentions):
        words = _words(surface)
        if len(words) == 1 and is_common_noun(words[0]):
            starts = sentence_starts(text) if starts is None else starts
            if start + surface.index(words[0]) in starts:
                doubtful.add(index)
    return doubtful


def _words(text: str) -> list[str]:
    from razdel import tokenize as razdel_tokenize

    return [t.text for t in razdel_tokenize(text) if any(ch.isalnum() for ch in t.text)]


@lru_cache(maxsize=100_000)
def is_common_noun(word: str) -> bool:
    """True when pymorphy3's most probable parse of ``word`` is a noun, none of its parses is a name, surname,
    patronymic, place, organisation, trade mark or abbreviation, and ``word`` has no capital after its first
    letter («Решением», «Аккрецией»: True; «Москва», «Волга», «Роза», «Python», «НОК»: False)."""
    if any(ch.isupper() for ch in word[1:]):
        return False  # an acronym or a capital inside («НОК», «ВЭБ-лизинг»): written as a name
    parses = _morph().parse(fold(word))
    if not parses or "NOUN" not in parses[0].tag:
        return False
    return not any(NAME_LIKE & p.tag.grammemes for p in parses)


def sentence_starts(text: str) -> set[int]:
    """Offsets in ``text`` of the first word of each razdel sentence."""
    from razdel import sentenize
    from razdel import tokenize as razdel_tokenize

    starts = set()
    for sentence in sentenize(text):
        first = next((t for t in razdel_tokenize(sentence.text) if any(ch.isalnum() for ch in t.text)), None)
        if first is not None:
            starts.add(sentence.start + first.start)
    return starts


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
    scores = {
        "entity_recall": shared / len(reference),
        "entity_f1": 2 * shared / (len(reference) + len(generated)),
    }
    if generated:
        scores["entity_precision"] = shared / len(generated)
    return scores


def headings_text(headings: Sequence[str]) -> str:
    """Headings as one text for the NER, each a sentence of its own («Ранние годы. Москва.»): joined by
    newlines alone, the NER reads a run of capitalized headings as one long name."""
    return " ".join(f"{h.strip().rstrip('.')}." for h in headings if h.strip())


def entity_scores(generated_text: str, reference_text: str) -> dict[str, float]:
    """Entity recall, precision and F1 of ``generated_text`` against ``reference_text`` (see module
    docstring)."""
    reference = entity_set(reference_text)
    if not reference:
        return {}
    return set_scores(entity_set(generated_text), reference)


def warm_entities() -> None:
    """The NER model of the entity metrics (about a second of CPU to load, most of it holding the GIL), loaded
    even when the warm-up text's entities are on disk already (the run's new texts will need it), and the
    model's identity (its files hashed: the key of the entities on disk); nothing when the model cannot
    load."""
    try:
        ner_model()
        model_identity()
        entity_set("Прогрев словаря в Москве.")
    except (ImportError, RuntimeError):
        return
