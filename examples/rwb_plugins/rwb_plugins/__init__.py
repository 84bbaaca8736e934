"""Example ruwikibench plug-ins, evaluated without editing ruwikibench (see configs/plugins.yaml):

- :mod:`rwb_plugins.one_call_outline` — a graph override: the whole outline stage as one LLM call;
- :mod:`rwb_plugins.embedding_rerank` — a node override: the ranking stage's ``rerank`` node scores each
  candidate by embedding similarity to the query instead of asking the LLM.
"""
