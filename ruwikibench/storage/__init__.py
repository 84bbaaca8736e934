"""Run-directory I/O: the run directory (rundir.py), spec.json typed (runspec.py), JSONL (jsonl.py), durable
file replacement (durable.py), the run lock (runlock.py), stage names of older files (stage_renames.py),
metrics.json and the result rows typed (results.py)."""
