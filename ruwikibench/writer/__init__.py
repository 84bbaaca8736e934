"""The STORM-like writer's support code: article models, outline files, exports, batch scoring.

The graph is :func:`ruwikibench.graphs.writer.build_writer_graph`; its nodes live in
:mod:`ruwikibench.nodes.writer` and :mod:`ruwikibench.nodes.citations`.
"""
