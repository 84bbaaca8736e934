"""The STORM-like writer's support code: article models, outline files, exports, batch scoring.

The graph is :func:`ruwikibench.graphs.article.build_article_graph`; its nodes live in
:mod:`ruwikibench.nodes.article` and :mod:`ruwikibench.nodes.citations`.
"""
