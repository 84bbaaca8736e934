"""Where work runs: the CPU pool and the model lane (executors.py), progress bars (progress.py), fault
injection for tests (faults.py)."""
