"""Everything a plug-in author imports: ``from ruwikibench.plugin import ...``.

A new stage is a subclass of :class:`Stage` registered with :func:`register_stage` (in a package installed
next to ruwikibench: the ``ruwikibench.stages`` entry point names the class)::

    class MyOutput(BaseModel):
        text: str

    class MyStage(Stage[MyOutput]):
        name = "my_stage"
        metrics = (Metric(key="rouge_l", label="ROUGE-L F", description="longest common subsequence F vs the "
                          "reference", kind="lexical", vs_baselines=True),)
        output_model = MyOutput              # score() receives the output validated as this
        options_model = MyOptions            # optional: ``stage_options.my_stage`` in a run config
        roles = ("my_role",)                 # optional: ``models.my_role`` (else the writer's model answers)

        def build_graph(self) -> StateGraph: ...  # input/output schemas, context_schema=StageContext
        def units(self, dataset, article, config) -> list[Unit]: ...   # graph inputs from gold data
        def score(self, unit, output: MyOutput, context) -> StageScore:
            return StageScore(records=[ScoreRecord(...)], texts=[GeneratedText(...)])

A :class:`Metric` says everything the reports need of a metric: its direction (↑/↓), scale (×100, count,
seconds), kind, whether it has a permutation floor and a rescaled twin (``floor=True``, then ``floor_sides()``
and ``cross_score()``), whether it is compared with the baselines, in paired comparisons, and the headline.
Every other member (``order``, ``retry_reason()``, ``failure_keys()``, …) has a documented default on
:class:`Stage`. A ``score()`` returning anything but a :class:`StageScore` (or a list of :class:`ScoreRecord`)
fails the unit with one error naming the stage and the method; the run lists it and exits non-zero.

What nodes use:

- :class:`StageContext` (``runtime.context`` in a node): the config, the LLM client, the embedder, the prompt
  library, the dataset; ``context.stage_options(name)`` gives a stage's validated options;
- :func:`ask` (format a prompt file, ask a role's model, clean the answer), :func:`clean_answer`;
- :func:`cut_text` and :func:`numbered_texts`: texts cut to a character budget at a word boundary, numbered;
- :func:`prompt_slot`: an options field naming a prompt file (its text is hashed into the run's identity);
- :func:`uses_prompts`: a node or graph override's declaration of the prompt files it reads (file names, or a
  model of ``prompt_slot`` fields): checked when the config loads, hashed into the run's identity;
- the built-in stages' options models (``RankingConfig``, ``OutlineConfig``, ``SectionsConfig``,
  ``WriterConfig``: ``config.options(OutlineConfig)``) and :class:`ModelRole` for a role with fallbacks;
- the built-in stages' input/output schemas (``RankingInput`` … ``WriterOutput``; the ``…OutputModel`` each
  stage's ``score()`` receives) for graph overrides, and each overridable node's input type for node
  overrides: ranking ``RankingState`` (expand_query, retrieve, rank), ``RerankTask`` (rerank); outline
  ``OutlineState`` (cluster, merge, parse), ``ClusterTask`` (select, describe, mini_outline; with ``Cluster``
  and ``ClusterResult``); sections ``SectionsState`` (finish), ``SectionInput`` (section: one section's
  subgraph, whose own nodes use ``SectionState``, ``CompressInput``, ``GroupSummary``, ``SectionResult``);
  writer ``WriterState``. ``select`` and ``describe`` route themselves: an override returns
  ``Command(goto=Send(...))`` as they do, not a dict (docs/plugins.md, "A node override");
- the data model a stage's ``units()`` and ``score()`` read: :class:`Dataset`, :class:`Article`,
  :class:`Section` (a heading with its paragraphs and subsections), :class:`Snippet` (a source's text window);
  and :func:`parse_outline` for outline answers.

What ``score()`` uses: the evaluators' pure functions (:func:`rouge_l`, :func:`sentence_bleu`,
:func:`lexical_scores`, :func:`sentence_prf`, :func:`text_scores`, :func:`entity_scores`,
:func:`ranking_metrics`, :func:`ndcg`, :func:`r_precision`, :func:`structure_stats`) and :class:`FloorSide`
for ``floor_sides()``.
"""

from __future__ import annotations

from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig, WriterConfig
from ruwikibench.conf.config import ModelRole, RunConfig, prompt_slot
from ruwikibench.dataset import Article, Dataset, Section, Snippet
from ruwikibench.evaluators.entities import entity_scores
from ruwikibench.evaluators.floor import FloorSide
from ruwikibench.evaluators.lexical import corpus_bleu, lexical_scores, rouge_l, sentence_bleu
from ruwikibench.evaluators.outline import structure_stats
from ruwikibench.evaluators.ranking import ndcg, r_precision, ranking_metrics
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.evaluators.text_scores import text_scores
from ruwikibench.nodes.answers import ask, clean_answer
from ruwikibench.nodes.outline import (
    Cluster,
    ClusterResult,
    ClusterTask,
    OutlineInput,
    OutlineOutput,
    OutlineSnippet,
    OutlineState,
)
from ruwikibench.nodes.outline_parser import Heading, parse_outline
from ruwikibench.nodes.ranking import (
    Candidate,
    Hit,
    Judgement,
    RankingInput,
    RankingOutput,
    RankingOutputModel,
    RankingState,
    RerankTask,
)
from ruwikibench.nodes.sections import (
    CompressInput,
    GroupSummary,
    SectionInput,
    SectionOutput,
    SectionResult,
    SectionsInput,
    SectionsOutput,
    SectionsOutputModel,
    SectionsState,
    SectionState,
)
from ruwikibench.nodes.writer import WriterInput, WriterOutput, WriterOutputModel, WriterState
from ruwikibench.prompts.render import cut_text, numbered_texts
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import (
    Baseline,
    BaselineSkipped,
    GeneratedText,
    ScoreRecord,
    Stage,
    StageOutputError,
    StageReturnError,
    StageScore,
    Unit,
)
from ruwikibench.stage.metric import Metric
from ruwikibench.stage.prompt_use import uses_prompts
from ruwikibench.stage.registry import get_stage, register_stage, stage_options, stage_roles

__all__ = [
    "Article",
    "Baseline",
    "BaselineSkipped",
    "Candidate",
    "Cluster",
    "ClusterResult",
    "ClusterTask",
    "CompressInput",
    "Dataset",
    "FloorSide",
    "GeneratedText",
    "GroupSummary",
    "Heading",
    "Hit",
    "Judgement",
    "Metric",
    "ModelRole",
    "OutlineConfig",
    "OutlineInput",
    "OutlineOutput",
    "OutlineSnippet",
    "OutlineState",
    "RankingConfig",
    "RankingInput",
    "RankingOutput",
    "RankingOutputModel",
    "RankingState",
    "RerankTask",
    "RunConfig",
    "ScoreRecord",
    "Section",
    "SectionInput",
    "SectionOutput",
    "SectionResult",
    "SectionState",
    "SectionsConfig",
    "SectionsInput",
    "SectionsOutput",
    "SectionsOutputModel",
    "SectionsState",
    "Snippet",
    "Stage",
    "StageContext",
    "StageOutputError",
    "StageReturnError",
    "StageScore",
    "Unit",
    "WriterConfig",
    "WriterInput",
    "WriterOutput",
    "WriterOutputModel",
    "WriterState",
    "ask",
    "clean_answer",
    "corpus_bleu",
    "cut_text",
    "entity_scores",
    "get_stage",
    "lexical_scores",
    "ndcg",
    "numbered_texts",
    "parse_outline",
    "prompt_slot",
    "r_precision",
    "ranking_metrics",
    "register_stage",
    "rouge_l",
    "sentence_bleu",
    "sentence_prf",
    "stage_options",
    "stage_roles",
    "structure_stats",
    "text_scores",
    "uses_prompts",
]
