"""The contract between a stage and the runner (bottom layer: graphs implement it, evaluators and the runner
consume it).

A stage is a subclass of :class:`Stage` registered by name in :mod:`ruwikibench.stage.registry`
(``@register_stage`` in the package, the ``ruwikibench.stages`` entry-point group for installed packages). It
must give ``name``, ``metrics`` (its :class:`~ruwikibench.stage.metric.Metric` declarations),
``build_graph()``, ``units()`` and ``score()``; every other member has a documented default on :class:`Stage`,
and the runner, reports, floors, baselines, overrides, config loader and registry read them directly. An
object that does not subclass :class:`Stage` (an older plug-in) is wrapped by the registry in
:class:`AdaptedStage`, which gives it the same defaults.

``score()`` gets the captured output validated by the stage's ``output_model`` (the output schema; the stored
JSON dict when a stage declares none) and returns a :class:`StageScore` (records and texts together) or, the
older way, a list of :class:`ScoreRecord` (texts then come from ``texts()``). Anything else is a
:class:`StageReturnError` naming the stage and the method: the unit is recorded as failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from langgraph.graph import StateGraph
from pydantic import BaseModel, ValidationError

from ruwikibench.conf.config import ModelRole, RunConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.stage.member_docs import with_member_docs
from ruwikibench.stage.metric import LEGACY_ATTRIBUTES, Metric, legacy_metrics
from ruwikibench.stage.records import (
    GeneratedText,
    ScoreRecord,
    StageOutputError,
    StageReturnError,
    StageScore,
    Unit,
)
from ruwikibench.storage.stage_renames import RENAMED_STAGES, current_stage_name, with_current_stage

AnyGraph = StateGraph[Any, Any, Any, Any]
"""Any stage graph (its state, context and input/output schemas are the stage's own)."""

if TYPE_CHECKING:
    from ruwikibench.evaluators.floor import FloorSide
    from ruwikibench.stage.context import StageContext
    from ruwikibench.storage.rundir import RunDir


class BaselineSkipped(Exception):
    """The baseline cannot be built for this unit (no snippets, no candidates, ...): the reason is counted."""


@dataclass(frozen=True)
class Baseline:
    """A no-LLM baseline of a stage: ``build(unit, run_output, context)`` returns an output in the stage's
    output schema (JSON-able dict), scored by the stage's own ``score()``. ``reads_output=False`` says that
    ``build`` never reads the run's output (only the unit's input and the context): the scoring process then
    scores it before the unit has run, whenever it has nothing else to do
    (:mod:`ruwikibench.runner.score_process`)."""

    name: str
    description: str
    build: Callable[[Unit, dict[str, Any], StageContext], dict[str, Any]]
    reads_output: bool = True


OutputT = TypeVar("OutputT")


@with_member_docs
class Stage(Generic[OutputT]):
    """The base class of a stage. ``OutputT`` is what ``score()`` receives (the type of ``output_model``).

    Required: ``name``, ``metrics``, :meth:`build_graph`, :meth:`units`, :meth:`score`. Everything else below
    is optional; the defaults are what the runner assumes of a stage that says nothing.
    """

    name: ClassVar[str]
    """The registry name, e.g. "ranking"; run files and configs use it."""
    metrics: ClassVar[tuple[Metric, ...]]
    """The stage's metrics, one :class:`~ruwikibench.stage.metric.Metric` each: its table (columns in this
    order), floors, baselines comparisons, paired comparisons, headline and the report's glossary all derive
    from them. Every metric key of a record is aggregated over items (mean, bootstrap 95% CI), declared or
    not. A subclass that sets the deprecated
    ``columns``/``count_keys``/``floor_keys``/``baseline_keys``/``headline_key`` instead gets the equivalent
    declarations (:func:`~ruwikibench.stage.metric.from_attributes`)."""

    output_model: ClassVar[type[BaseModel] | None] = None
    """The pydantic model ``score()`` receives the output as (validated from the stored JSON output; the
    graph's output schema, or a model of the keys ``score()`` reads, as the built-in stages declare next to
    their TypedDict graph schemas); None: the stored dict as it is."""
    description: ClassVar[str] = ""
    """One line saying what the stage does; the console, report.md and report.html title the stage's table
    with it when the paper has no table of the stage ('': the bare name)."""
    order: ClassVar[int] = 100
    """Where the stage's table comes in reports (lower first)."""
    profiles: ClassVar[tuple[str, ...]] = ("benchmark", "writer")
    """The config profiles that may run the stage."""
    baselines: ClassVar[tuple[Baseline, ...]] = ()
    """The stage's no-LLM baselines, scored by its own ``score()`` beside the run
    (:mod:`ruwikibench.baselines`)."""
    options_model: ClassVar[type[BaseModel] | None] = None
    """The pydantic model of the stage's ``stage_options`` block in a run config (None: the stage has none); a
    config holds it validated (``config.options(MyOptions)``)."""
    options_alias: ClassVar[bool] = False
    """The options are also read from a top-level config key named like the stage (``outline:``, an alias of
    ``stage_options.outline``) and hashed under that key in the config's identity, where configs written
    before ``stage_options`` existed put them, so their run ids stay (the built-in stages)."""
    runs_by_default: ClassVar[bool] = False
    """The stage is in a config's ``stages`` when the config names none (the benchmark's three stages)."""
    planted_output: ClassVar[Literal["headings", "text"] | None] = None
    """What the validity ladder (``ruwikibench check-metrics``, :mod:`ruwikibench.validity.ladder`) plants as
    the stage's output: "headings" (an outline, (title, headings)) or "text" (a section's text); None: no
    ladder. Its headline metric is :attr:`headline_key` (else the first column's)."""
    warm_modules: ClassVar[tuple[str, ...]] = ()
    """Modules the stage would import lazily mid-run: the runner imports them once its first request is out
    (:mod:`ruwikibench.runner.warmup`; a module that is not installed is skipped)."""
    paper_table: ClassVar[str | None] = None
    """The paper's table of the stage ("Table 5"), shown beside its title in reports; None: not in the
    paper."""
    table_label: ClassVar[str | None] = None
    """What the stage's table is when the paper has none ("whole article, not in the paper"); None: the
    :attr:`description`."""
    doc_page: ClassVar[str | None] = None
    """The docs page (``docs/<doc_page>``) that shows the stage's graph, kept by ``ruwikibench graph
    --update-docs``; None: none."""
    roles: ClassVar[tuple[str | ModelRole, ...]] = ()
    """Model roles the stage asks (``models.<role>`` in a config): a name, or a :class:`ModelRole` with its
    fallbacks; a missing one falls back (:func:`ruwikibench.conf.config.role_served_by`: the writer's
    model)."""
    prompt_files: ClassVar[tuple[str, ...]] = ()
    """Prompt files the stage reads besides its options' prompt fields (hashed into the run's identity)."""
    subgraph_stages: ClassVar[tuple[str, ...]] = ()
    """Stages whose graphs this stage's graph embeds: overrides of those reach this one too."""
    output_keys: ClassVar[frozenset[str] | None] = None
    """The output keys an override graph must produce (None: the required keys of the graph's output
    schema)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "metrics" not in own and any(attribute in own for attribute in LEGACY_ATTRIBUTES):
            cls.metrics = legacy_metrics(cls)

    def build_graph(self) -> AnyGraph:
        """The uncompiled StateGraph (input/output schemas, ``context_schema=StageContext``)."""
        raise NotImplementedError(f"stage {self.name!r} defines no build_graph()")

    def warm_up(self, config: RunConfig, *, scoring: bool) -> None:
        """Build what the stage builds lazily (dictionaries, models) before the run needs it, off the event
        loop; ``scoring``: units are scored in this process. Default nothing."""

    def article_view(self, records: Any) -> dict[str, Any] | None:
        """What the HTML article page shows of the stage's records of one article (``records``: an
        :class:`~ruwikibench.reporting.article_views.ArticleRecords`), a dict for the article template told
        apart by its ``kind``; None (default): the generated texts beside their references."""
        return None

    def reads_reference_queries(self, config: RunConfig) -> bool:
        """The stage reads the dataset's stored reference queries under ``config``: the runner writes the
        missing ones before the run and hashes the file into the run id
        (:mod:`ruwikibench.runner.reference_queries`)."""
        return False

    def profile_options(self, profile: str, options: dict[str, BaseModel]) -> dict[str, BaseModel]:
        """The stages' validated options (by stage name) as they run under ``profile``: a stage that declares
        a profile of its own rewrites them for it (the writer's puts ranking, outline and sections in writer
        mode); default unchanged. Called when a config is validated."""
        return options

    def build_graph_from(self, subgraphs: dict[str, AnyGraph]) -> AnyGraph:
        """The graph embedding ``subgraphs``: the graphs of ``subgraph_stages`` with the config's overrides
        applied (called instead of :meth:`build_graph` for a stage that declares ``subgraph_stages``)."""
        return self.build_graph()

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        """The graph inputs from GOLD data: one :class:`Unit` per independently resumable piece of work."""
        raise NotImplementedError(f"stage {self.name!r} defines no units()")

    def score(self, unit: Unit, output: OutputT, context: StageContext) -> StageScore | list[ScoreRecord]:
        """Records (and texts) for the captured output; a paper exclusion is a record with ``excluded`` set,
        not an exception."""
        raise NotImplementedError(f"stage {self.name!r} defines no score()")

    def texts(self, unit: Unit, output: OutputT) -> list[GeneratedText]:
        """Generated texts when ``score()`` returns a bare list of records (the older contract); default
        none."""
        return []

    def retry_reason(self, output: dict[str, Any]) -> str | None:
        """Why a finished unit (its stored output) is run again on resume; None: it is done."""
        return None

    def failure_keys(self, reason: str, keys: list[str]) -> list[str]:
        """The metric keys a failed unit zeroes in the failures-as-zero view (default: all)."""
        return list(keys)

    def floor_sides(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[FloorSide]:
        """The scored items of a stored output as floor sides (for the metrics declared with a floor); default
        none."""
        return []

    def cross_score(self, generated: Any, reference: Any, context: StageContext) -> dict[str, float]:
        """The floored metrics of a generated side against another item's reference."""
        raise NotImplementedError(f"stage {self.name!r} declares floored metrics but no cross_score()")

    def reference_pool(self, context: StageContext) -> list[FloorSide] | None:
        """References to draw floor pairs from when a run holds too few articles (None: the run's own
        items)."""
        return None

    def run_floors(
        self, rundir: RunDir, context: StageContext, *, per_item: int, seed: int
    ) -> list[dict[str, Any]]:
        """Floor rows the stage computes over the whole run directory (records it files under other
        stages)."""
        return []

    # -- used by the runner; not meant to be overridden -----------------------------------------------------

    def parse_output(self, output: dict[str, Any]) -> OutputT:
        """The stored output as ``score()`` receives it (:class:`StageOutputError` naming the stage if it does
        not fit ``output_model``)."""
        if self.output_model is None:
            return output  # type: ignore[return-value]  # a stage without output_model scores the dict
        try:
            return self.output_model.model_validate(output)  # type: ignore[return-value]
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(output)'}: {e['msg']}" for e in exc.errors()[:3]
            )
            raise StageOutputError(
                f"stage {self.name!r}: the output does not fit {_type_name(self.output_model)}: {problems}"
            ) from None

    def checked_score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> StageScore:
        """``score()`` of the stored output, its return checked (:class:`StageReturnError`); the texts of an
        older stage's bare list of records come from ``texts()``."""
        parsed = self.parse_output(output)
        returned = self.score(unit, parsed, context)
        if isinstance(returned, StageScore):
            return returned
        records = self._records(returned)
        return StageScore(records=records, texts=self._texts(self.texts(unit, parsed)))

    def _records(self, returned: object) -> list[ScoreRecord]:
        if not isinstance(returned, list):
            raise StageReturnError(
                f"stage {self.name!r}: score() returned {_type_name(type(returned))}, "
                "expected StageScore or list[ScoreRecord]"
            )
        wrong = [item for item in returned if not isinstance(item, ScoreRecord)]
        if wrong:
            raise StageReturnError(
                f"stage {self.name!r}: score() returned a list holding "
                f"{_type_name(type(wrong[0]))}, expected StageScore or list[ScoreRecord]"
            )
        return returned

    def _texts(self, returned: object) -> list[GeneratedText]:
        if not isinstance(returned, list) or not all(isinstance(t, GeneratedText) for t in returned):
            held = (
                type(returned)
                if not isinstance(returned, list)
                else next(type(t) for t in returned if not isinstance(t, GeneratedText))
            )
            raise StageReturnError(
                f"stage {self.name!r}: texts() returned {_type_name(held)}"
                f"{'' if not isinstance(returned, list) else ' in its list'}, "
                "expected list[GeneratedText]"
            )
        return returned


def _type_name(kind: Any) -> str:
    return str(getattr(kind, "__name__", kind))


REQUIRED_MEMBERS = ("name", "metrics", "build_graph", "units", "score")
OPTIONAL_ATTRIBUTES = (
    "output_model",
    "description",
    "order",
    "profiles",
    "baselines",
    "options_model",
    "options_alias",
    "runs_by_default",
    "planted_output",
    "warm_modules",
    "paper_table",
    "table_label",
    "doc_page",
    "roles",
    "prompt_files",
    "subgraph_stages",
    "output_keys",
)
OPTIONAL_METHODS = (
    "texts",
    "retry_reason",
    "failure_keys",
    "floor_sides",
    "cross_score",
    "reference_pool",
    "run_floors",
    "profile_options",
    "warm_up",
    "reads_reference_queries",
    "article_view",
)


class AdaptedStage(Stage[Any]):
    """A stage object that does not subclass :class:`Stage` (an older plug-in, a plain entry-point object),
    seen through the base class: the members it has, the base class's defaults for the others."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        members = vars(self)
        for attribute in ("name", *OPTIONAL_ATTRIBUTES):
            if hasattr(plugin, attribute):
                members[attribute] = getattr(plugin, attribute)
        members["metrics"] = tuple(declared_metrics(plugin))
        for attribute in (
            "baselines",
            "roles",
            "prompt_files",
            "subgraph_stages",
            "profiles",
            "warm_modules",
        ):
            members[attribute] = tuple(getattr(self, attribute) or ())
        for method in OPTIONAL_METHODS:
            if hasattr(plugin, method):
                members[method] = getattr(plugin, method)

    def build_graph(self) -> AnyGraph:
        graph: AnyGraph = self.plugin.build_graph()
        return graph

    def build_graph_from(self, subgraphs: dict[str, AnyGraph]) -> AnyGraph:
        graph: AnyGraph = self.plugin.build_graph(subgraphs)
        return graph

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        units: list[Unit] = self.plugin.units(dataset, article, config)
        return units

    def score(self, unit: Unit, output: Any, context: StageContext) -> StageScore | list[ScoreRecord]:
        returned: StageScore | list[ScoreRecord] = self.plugin.score(unit, output, context)
        return returned


def declared_metrics(stage: object) -> tuple[Metric, ...]:
    """A stage object's ``metrics``, or the declarations adapted from its deprecated attributes."""
    declared = getattr(stage, "metrics", None)
    if isinstance(declared, tuple | list) and all(isinstance(m, Metric) for m in declared):
        return tuple(declared)
    return legacy_metrics(stage)


def _has_member(stage: object, member: str) -> bool:
    """``metrics`` is also there as the deprecated ``columns``."""
    return hasattr(stage, member) or (member == "metrics" and hasattr(stage, "columns"))


def missing_members(stage: object) -> list[str]:
    """The required members a stage object lacks (for a :class:`Stage` subclass: the methods it does not
    define itself, since the base class's only raise)."""
    if isinstance(stage, Stage):
        return [
            member
            for member in REQUIRED_MEMBERS
            if not hasattr(stage, member) or getattr(type(stage), member) is getattr(Stage, member, None)
        ]
    return [member for member in REQUIRED_MEMBERS if not _has_member(stage, member)]


def as_stage(stage: object) -> Stage[Any]:
    """The object as a :class:`Stage`: itself when it subclasses it, else wrapped in :class:`AdaptedStage`."""
    return stage if isinstance(stage, Stage) else AdaptedStage(stage)


def defining_stage(stage: Stage[Any]) -> object:
    """The object that defines a stage's code: the plug-in object an :class:`AdaptedStage` wraps, else the
    stage."""
    return stage.plugin if isinstance(stage, AdaptedStage) else stage


def score_failure(exc: BaseException) -> str:
    """The reason a unit's scoring failed, one line for errors.jsonl: a contract error says itself (it names
    the stage and the method), any other exception is prefixed with its type."""
    if isinstance(exc, StageReturnError | StageOutputError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


__all__ = [
    "RENAMED_STAGES",
    "AdaptedStage",
    "AnyGraph",
    "Baseline",
    "BaselineSkipped",
    "GeneratedText",
    "ScoreRecord",
    "Stage",
    "StageOutputError",
    "StageReturnError",
    "StageScore",
    "Unit",
    "as_stage",
    "current_stage_name",
    "defining_stage",
    "missing_members",
    "score_failure",
    "with_current_stage",
]
