"""The writer's typed results, re-exported from :mod:`ruwikibench.nodes.written` where they live."""

from ruwikibench.nodes.written import OutlineItem, WrittenArticle, WrittenSection

__all__ = ["OutlineItem", "WrittenArticle", "WrittenSection"]
