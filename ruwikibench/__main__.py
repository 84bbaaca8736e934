"""``python -m ruwikibench`` and the ``ruwikibench`` command: the CLI, imported with the garbage collector
paused (:func:`ruwikibench.runtime.executors.pause_gc`: typer, rich and the config models allocate much and
free almost nothing)."""

from ruwikibench.runtime.executors import gc_paused_for_startup


def main() -> None:
    with gc_paused_for_startup():
        from ruwikibench.cli import main as cli_main
    cli_main()


if __name__ == "__main__":
    main()
