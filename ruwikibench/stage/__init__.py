"""The stage contract: what a stage is (contract.py), the metrics it declares (metric.py), stages by name
(registry.py), and the context every stage graph receives (context.py)."""
