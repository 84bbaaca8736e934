"""Score aggregation: per-item scores into run metrics with CIs (metrics.py), permutation floors (floors.py),
the no-LLM baselines of a run (baselines.py), floors.jsonl and baselines.jsonl in one streamed pass
(derived.py)."""
