"""The Python API, for notebooks and scripts: :func:`run`, :func:`score` and :func:`report` do what
``ruwikibench run``, ``ruwikibench score`` and ``ruwikibench report`` do (the CLI calls the same helpers
below) and return a :class:`Run` instead of printing tables.

Bad input raises :class:`~ruwikibench.conf.config.RunInputError` (a
:class:`~ruwikibench.conf.config.ConfigError` for the config) with the one-line message the CLI prints. Called
where an event loop is already running (Jupyter), a run goes to a worker thread with its own loop. Heavy
modules are imported inside the functions: ``import ruwikibench`` stays cheap.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import warnings
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ruwikibench.conf.config import RunConfig, RunInputError

if TYPE_CHECKING:
    from ruwikibench.dataset import Dataset
    from ruwikibench.runner.execute import RunOptions
    from ruwikibench.storage.rundir import RunDir

T = TypeVar("T")
ConfigLike = str | Path | dict[str, Any] | RunConfig


@dataclass(frozen=True)
class Run:
    """A run directory read back: its ``metrics.json`` and the exit status the CLI would give it."""

    path: Path
    metrics: dict[str, Any]
    exit_status: int = 0
    """0: no unit failed; 1: nothing that needed the endpoint succeeded; 3: a partial run
    (runner/status.py)."""

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def open(cls, path: str | Path) -> Run:
        """The run in ``path`` (:class:`~ruwikibench.storage.rundir.NotARunDir` when it is not a run
        directory)."""
        from ruwikibench.storage.results import read_metrics, stage_dicts
        from ruwikibench.storage.rundir import RunDir

        rundir = RunDir(path)
        metrics = stage_dicts(read_metrics(rundir))  # validated, any format version, as dicts per stage
        return cls(path=rundir.path, metrics=metrics, exit_status=_status(rundir))

    def rows(self) -> list[dict[str, Any]]:
        """The rows of metrics.csv: run, stage, metric, view, mean, low, high, n
        (``pandas.DataFrame(run.rows())``)."""
        from ruwikibench.aggregation.metrics import metrics_rows

        return metrics_rows(self.run_id, self.metrics)

    def baselines(self) -> list[dict[str, Any]]:
        """The no-LLM baselines beside the run, one row per stage, baseline, metric and view (columns as
        :meth:`rows` plus ``baseline``); on the best baseline's compared metrics (``vs_baseline``, view
        failures_excluded) also ``difference``, ``difference_low``, ``difference_high`` (run − baseline),
        ``p_value`` and ``verdict``; None elsewhere."""
        rows = []
        for stage, data in self.metrics.items():
            versus = data.get("vs_baseline") or {}
            for baseline, summary in (data.get("baselines") or {}).items():
                for metric, views in summary.get("metrics", {}).items():
                    for view, estimate in views.items():
                        compared = versus.get(metric, {})
                        hit = compared.get("baseline") == baseline and view == "failures_excluded"
                        difference = compared.get("difference", {}) if hit else {}
                        rows.append(
                            {
                                "run": self.run_id,
                                "stage": stage,
                                "baseline": baseline,
                                "metric": metric,
                                "view": view,
                                **estimate,
                                "difference": difference.get("mean"),
                                "difference_low": difference.get("low"),
                                "difference_high": difference.get("high"),
                                "p_value": compared.get("p_value") if hit else None,
                                "verdict": compared.get("verdict") if hit else None,
                            }
                        )
        return rows


def run(
    config: ConfigLike,
    dataset: str | Path,
    stages: Iterable[str] | None = None,
    articles: int | None = None,
    article_names: Iterable[str] | None = None,
    out: str | Path = "runs",
    run_id: str | None = None,
    progress: bool = False,
    shard: str | None = None,
    score_in: str = "auto",
) -> Run:
    """Run (or resume) ``stages`` (default: the config's) on ``dataset``, as ``ruwikibench run all`` does: the
    same run directory under ``out`` and the same run id for the same inputs.

    ``config``: a YAML path, a dict of settings or a :class:`RunConfig`; ``dataset``: a processed dataset
    directory, a RuWikiBench JSON file or ``hf://OWNER/NAME[/FILE]``; ``articles``: the first N;
    ``article_names``: by name; ``shard``: ``"I/N"``, share I of N of the articles (one machine each;
    :func:`merge` joins the shards); ``score_in``: ``"auto"``, ``"process"`` or ``"thread"``, where units are
    scored (``--score-in``).
    """
    from ruwikibench.runner.shard import Shard

    share = Shard.parse(shard) if shard is not None else None
    if score_in not in ("auto", "thread", "process"):
        raise RunInputError(f"score_in {score_in!r}: one of auto, thread, process")
    loaded, data, path = load_inputs(config, dataset)
    options = run_options(loaded, stages, articles, article_names, out, run_id, progress).model_copy(
        update={"shard": share, "score_in": score_in}
    )
    return Run.open(execute_run(loaded, data, path, options).path)


def merge(
    shard_dirs: Iterable[str | Path | Run], into: str | Path | None = None, dataset: str | Path | None = None
) -> Run:
    """Join the shard directories of one run, as ``ruwikibench merge`` does: ``<into>/<run id>`` (default
    ``into``: the first shard's folder) with floors, baselines, metrics and report of the whole."""
    from ruwikibench.runner.merge import merge_shards

    merged = merge_shards(
        [_path(d) for d in shard_dirs],
        Path(into) if into is not None else None,
        str(dataset) if dataset is not None else None,
    )
    return Run.open(merged.path)


def score(run_dir: str | Path | Run) -> Run:
    """Re-score a saved run from its captured outputs, as ``ruwikibench score`` does (no LLM call)."""
    return Run.open(rescore_run(_path(run_dir)).path)


def report(
    run_dirs: Iterable[str | Path | Run],
    out: str | Path = "runs/report",
    view: str = "failures_excluded",
    paper: bool = False,
) -> Path:
    """Compare runs as ``ruwikibench report`` does: report.md, report.html, CSV and PNG per stage in ``out``;
    returns the path of report.md. ``paper``: the paper's published results as reference rows
    (``--paper``)."""
    from ruwikibench.reporting.compare import compare_runs

    return compare_runs([_path(r) for r in run_dirs], Path(out), view, paper)


# The helpers the CLI shares ---------------------------------------------------------------------------------


def load_inputs(
    config: ConfigLike,
    dataset: str | Path,
    on_import_error: Callable[[str], None] | None = None,
) -> tuple[RunConfig, Dataset, Path]:
    """The checked config (node/graph overrides resolved: before any LLM call) and the dataset with its path.
    Each article of a RuWikiBench JSON that failed to import is one line to ``on_import_error`` (default: a
    warning; the CLI prints it as an error line)."""
    from ruwikibench.corpus_builder.dataset_files import import_errors, resolve_dataset
    from ruwikibench.runner.overrides import check_overrides

    loaded, origin = load_any_config(config)
    check_overrides(loaded, origin)
    data, path = resolve_dataset(str(dataset), source_texts=False)  # a run reads snippets, never source texts
    for line in import_errors(path):
        if on_import_error is not None:
            on_import_error(line)
        else:
            warnings.warn(line, stacklevel=3)
    return loaded, data, path


def load_any_config(config: ConfigLike) -> tuple[RunConfig, str | Path]:
    """A config from a YAML path, a dict or a RunConfig (checked as a config file is), and the name errors
    use."""
    from ruwikibench.conf.loader import config_from_data, load_config

    if isinstance(config, RunConfig):
        return config_from_data(config.model_dump(), "config"), "config"
    if isinstance(config, dict):
        return config_from_data(config, "config"), "config"
    if isinstance(config, str | Path):
        return load_config(config), Path(config)
    raise RunInputError(f"config: a YAML path, a dict or a RunConfig, got {type(config).__name__}")


def run_options(
    config: RunConfig,
    stages: Iterable[str] | None,
    articles: int | None,
    article_names: Iterable[str] | None,
    out: str | Path,
    run_id: str | None,
    progress: bool,
) -> RunOptions:
    """RunOptions with every stage name checked against the registry (:class:`RunInputError` naming it)."""
    from ruwikibench.runner.execute import RunOptions
    from ruwikibench.stage.registry import StageRegistryError, get_stage

    if isinstance(stages, str):
        stages = [stages]
    names = []
    for name in stages if stages is not None else config.stages:
        try:
            names.append(get_stage(name).name)
        except StageRegistryError as exc:
            raise RunInputError(f"stages: {exc.args[0] if exc.args else exc}") from None
    if isinstance(article_names, str):
        article_names = [article_names]
    return RunOptions(
        stages=names,
        articles=articles,
        article_names=list(article_names) if article_names is not None else None,
        out=Path(out),
        run_id=run_id,
        progress=progress,
    )


def execute_run(config: RunConfig, dataset: Dataset, path: Path, options: RunOptions) -> RunDir:
    """Run (or resume) a benchmark run and return its directory; the LLM client is closed at the end."""
    from ruwikibench.runner.execute import execute
    from ruwikibench.runner.setup import build_context

    async def go() -> RunDir:
        context = build_context(config, dataset, path)
        try:
            return await execute(context, str(path), options)
        finally:
            close = getattr(context.llm, "aclose", None)
            if close is not None:
                await close()

    return run_coroutine(go)


def rescore_run(run_dir: Path) -> RunDir:
    """Re-score a run directory from its outputs (an external run from its copy of them); no LLM call."""
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.runner.rescore import rescore
    from ruwikibench.runner.setup import build_context
    from ruwikibench.storage.rundir import RunDir
    from ruwikibench.storage.runspec import InvalidSpec, read_spec

    rundir = RunDir(run_dir)
    spec = read_spec(rundir.path)
    config = spec.run_config(rundir.file("spec.json"))
    if spec.dataset is None or not spec.dataset.path:
        raise InvalidSpec(f"{rundir.file('spec.json')}: field 'dataset.path' missing")
    dataset, path = resolve_dataset(spec.dataset.path)
    context = build_context(config, dataset, path, with_llm=False)
    if spec.mode == "external":
        from ruwikibench.external.score import rescore_external

        rescore_external(rundir, context, str(path))
    else:
        rescore(rundir, context)
    return rundir


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run`` of a fresh coroutine; where an event loop already runs in this thread (a notebook), in
    a worker thread with its own loop, this thread waiting for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ruwikibench-run") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _status(rundir: RunDir) -> int:
    from ruwikibench.runner.status import exit_status, run_status, succeeded_units
    from ruwikibench.storage.runspec import read_spec

    if read_spec(rundir.path).mode == "external":  # no endpoint: did any unit succeed at all
        errors = rundir.open_errors()
        return exit_status(len(errors), len(succeeded_units(rundir, errors)) if errors else 0)
    return run_status(rundir)


def _path(run: str | Path | Run) -> Path:
    return run.path if isinstance(run, Run) else Path(run)
