"""Load, before a run sends its first request, what its stages would otherwise load lazily mid-run.

Importing a large package (sklearn, scipy, langchain-openai) or loading a morphology dictionary runs C
initializers that hold the GIL; done lazily in a worker thread in the middle of a run, each stalls the event
loop (and with it every request in flight) for up to half a second — measured on 2 loaded cores. Done once up
front, before any request is in flight, it costs the same CPU and stalls nothing that matters.
"""

from __future__ import annotations

import importlib

from ruwikibench.config import RunConfig

COMMON = ("httpx", "openai", "langchain_openai", "numpy")
BY_STAGE: dict[str, tuple[str, ...]] = {
    "ranking": ("bm25s", "Stemmer", "stop_words", "pymorphy3", "ruwikibench.evaluators.ranking"),
    "outline": ("sklearn.cluster", "sklearn.metrics", "razdel", "ruwikibench.evaluators.outline"),
    "sections": (
        "scipy.sparse.csgraph",
        "sacrebleu",
        "razdel",
        "ruwikibench.evaluators.lexical",
        "ruwikibench.evaluators.similarity",
    ),
}


def modules_for(stages: list[str]) -> list[str]:
    """The modules the given stages load lazily (unknown stages add nothing), in a stable order."""
    names = list(COMMON)
    for stage in stages:
        names += [m for m in BY_STAGE.get(stage, ()) if m not in names]
    return names


def warm_up(stages: list[str], config: RunConfig, *, scoring: bool = True) -> list[str]:
    """Import the stages' modules and build the lazily built helpers they share; returns what was loaded.
    ``scoring=False``: units are scored in another process (runner/score_process.py), which loads the NER model.

    A module that is not installed is skipped here: the stage that needs it reports that itself."""
    loaded = []
    for name in modules_for(stages):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        loaded.append(name)
    if "ranking" in stages:
        from ruwikibench.retrieval.normalize import Normalizer, stopwords

        stopwords()
        Normalizer(config.ranking.normalizer).terms("прогрев словаря")
    if scoring and {"outline", "sections", "writer"} & set(stages):
        _warm_entities()
    return loaded


def _warm_entities() -> None:
    """The NER model of the entity metrics (about a second of CPU to load, most of it holding the GIL), loaded
    even when the warm-up text's entities are on disk already (the run's new texts will need it), and the model's
    identity (its files hashed: the key of the entities on disk)."""
    try:
        from ruwikibench.evaluators.entities import entity_set, model_identity, ner_model

        ner_model()
        model_identity()
        entity_set("Прогрев словаря в Москве.")
    except (ImportError, RuntimeError):
        return
