"""ruwikibench: the RuWikiBench benchmark as LangGraph stage graphs, and a STORM-like writer built from them."""

from ruwikibench.api import Run, report, run, score
from ruwikibench.config import RunConfig
from ruwikibench.config_loader import load_config
from ruwikibench.dataset import Article, Dataset, Paragraph, Reference, Section, Snippet, Source
from ruwikibench.version import __version__

__all__ = [
    "Article",
    "Dataset",
    "Paragraph",
    "Reference",
    "Run",
    "RunConfig",
    "Section",
    "Snippet",
    "Source",
    "__version__",
    "load_config",
    "report",
    "run",
    "score",
]
