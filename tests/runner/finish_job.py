"""`ruwikibench run all` on the writer fixture's dataset with the deterministic hash embedder, as a subprocess
(so a fault point can kill it): ``python finish_job.py ARGS…`` passes ARGS to the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ruwikibench.cli import main
from ruwikibench.runner import setup
from tests.graphs.writer_fixture import HashEmbedder

if __name__ == "__main__":
    setup.make_embedder = lambda config, *_: HashEmbedder()  # type: ignore[assignment,misc]
    sys.argv = ["ruwikibench", *sys.argv[1:]]
    main()
