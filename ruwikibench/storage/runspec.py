"""``spec.json``, typed: :class:`RunSpec` (with ``format_version``), written by the run orchestrator
(:mod:`ruwikibench.runner.open_run`) and read back by every command through :func:`read_spec`.

:func:`read_spec` also reads run directories written before the format had a version (``format_version``
absent, read as 0) and before stages were renamed: they are upgraded in memory (:func:`upgrade`), never
rewritten. A spec.json that is not valid raises :class:`InvalidSpec` naming the file and the field.

Format versions:

- 0: no ``format_version``; ``mode`` absent for benchmark runs; stage names of the time (``article`` for the
  writer) in ``options.stages`` and ``external.stage``.
- 1: ``format_version`` and ``mode`` (benchmark | writer | external) always written; current stage names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ruwikibench.conf.config import RunConfig
from ruwikibench.storage.rundir import NotARunDir, RunDir
from ruwikibench.storage.stage_renames import current_stage_name

FORMAT_VERSION = 1
SPEC_FILE = "spec.json"
RunMode = Literal["benchmark", "writer", "external"]


class InvalidSpec(NotARunDir):
    """spec.json holds JSON that is not a run spec: the message names the file and the field."""


class _Record(BaseModel):
    """A block of spec.json: its known fields typed, keys of other versions kept as they are."""

    model_config = ConfigDict(extra="allow")


class DatasetRecord(_Record):
    id: str
    path: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class ReferenceQueriesRecord(_Record):
    """Which stored reference queries the ranking read
    (:func:`ruwikibench.nodes.queries.reference_queries_identity`)."""

    path: str | None = None
    sha256: str | None = None
    model: str | None = None


class SpecOptions(_Record):
    """The run options (:class:`ruwikibench.runner.execute.RunOptions` without ``progress``)."""

    stages: list[str] = Field(default_factory=list)
    articles: int | None = None
    article_names: list[str] | None = None
    out: str | None = None
    run_id: str | None = None


class UnitCounts(_Record):
    total: int = 0
    run_now: int = 0
    scored_on_resume: int = 0


class ExternalRecord(_Record):
    """The outputs file an external run scored (and its provenance: extra keys)."""

    stage: str
    file: str | None = None
    sha256: str | None = None
    rows: int | None = None
    rows_outside_selection: int | None = None
    copy_name: str | None = Field(default=None, alias="copy")
    format_version: int | None = None
    system: str | None = None
    label: str | None = None

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ShardRecord(_Record):
    """Which share of the run's articles a shard directory holds (``run … --shard I/N``)."""

    index: int
    count: int
    articles: list[str] = Field(default_factory=list)


class ScoredWithRecord(_Record):
    """The code that last scored the run again (``ruwikibench score``): when, ruwikibench's version and git
    commit, the plug-in stages' code identity (as ``stage_identity``), and what differs from the code that
    made the outputs (``changed``: ``ruwikibench``, ``stage <name>``)."""

    at: str | None = None
    package_version: str | None = None
    git_commit: str | None = None
    stage_identity: dict[str, dict[str, Any]] = Field(default_factory=dict)
    changed: list[str] = Field(default_factory=list)


# left out of spec.json when None (blocks only some runs have; fields a spec of another version may lack)
OMITTED_WHEN_NONE = (
    "stage_identity",
    "reference_queries",
    "external",
    "units",
    "last_session",
    "run_id",
    "dataset",
    "config",
    "created",
    "shard",
    "scored_with",
)


class RunSpec(_Record):
    """spec.json of a run directory."""

    format_version: int = FORMAT_VERSION
    run_id: str | None = None
    mode: RunMode = "benchmark"
    package_version: str | None = None
    git_commit: str | None = None
    dataset: DatasetRecord | None = None
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    embedder: str | None = None
    profile: str | None = None
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    stage_identity: dict[str, dict[str, Any]] | None = None
    config: dict[str, Any] | None = None
    options: SpecOptions = Field(default_factory=SpecOptions)
    reference_queries: ReferenceQueriesRecord | None = None
    external: ExternalRecord | None = None
    prompts: dict[str, str] = Field(default_factory=dict)
    created: str | None = None
    units: UnitCounts | None = None
    last_session: dict[str, Any] | None = None
    shard: ShardRecord | None = None
    scored_with: ScoredWithRecord | None = None

    @property
    def dataset_id(self) -> str | None:
        return self.dataset.id if self.dataset is not None else None

    @property
    def stages(self) -> list[str]:
        return list(self.options.stages)

    def run_config(self, path: Path | str = SPEC_FILE) -> RunConfig:
        """The recorded config, checked; :class:`InvalidSpec` naming ``path`` and the field when it is not
        one."""
        if self.config is None:
            raise InvalidSpec(f"{path}: field 'config' missing")
        try:
            return RunConfig.model_validate(self.config)
        except ValidationError as exc:
            raise InvalidSpec(f"{path}: field 'config' is not a valid run config ({_fields(exc)})") from None

    def record(self) -> dict[str, Any]:
        """What spec.json holds: the current format, optional blocks left out when absent."""
        data = self.model_dump(mode="json", by_alias=True)
        for key in OMITTED_WHEN_NONE:
            if data.get(key) is None:
                data.pop(key, None)
        return data


def _fields(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}" for e in exc.errors())


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A spec.json of any format version as the current one (a copy: the file is never rewritten)."""
    data = dict(data)
    version = data.get("format_version", 0)
    if version == 0:
        options = dict(data.get("options") or {})
        if isinstance(options.get("stages"), list):
            options["stages"] = [
                current_stage_name(s) if isinstance(s, str) else s for s in options["stages"]
            ]
            data["options"] = options
        external = data.get("external")
        if isinstance(external, dict) and isinstance(external.get("stage"), str):
            data["external"] = {**external, "stage": current_stage_name(external["stage"])}
        data.setdefault("mode", "benchmark")
        data["format_version"] = FORMAT_VERSION
    return data


def parse_spec(data: Any, path: Path | str = SPEC_FILE) -> RunSpec:
    """A spec.json's content as a :class:`RunSpec` (old formats upgraded); :class:`InvalidSpec` naming the
    field."""
    if not isinstance(data, dict):
        raise InvalidSpec(f"{path}: not a run spec (a JSON object expected, found {type(data).__name__})")
    version = data.get("format_version", 0)
    if not isinstance(version, int) or version < 0:
        raise InvalidSpec(f"{path}: field 'format_version': {version!r} is not a format version")
    if version > FORMAT_VERSION:
        raise InvalidSpec(
            f"{path}: field 'format_version': {version} is newer than this ruwikibench reads "
            f"({FORMAT_VERSION}); upgrade ruwikibench"
        )
    try:
        return RunSpec.model_validate(upgrade(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "(top level)"
        raise InvalidSpec(f"{path}: field {field!r}: {first['msg']}") from None


def read_spec(path: str | Path) -> RunSpec:
    """The spec of a run directory (or of a spec.json file): :class:`NotARunDir` when missing or not JSON,
    :class:`InvalidSpec` when a field is wrong."""
    path = Path(path)
    rundir = RunDir(path.parent) if path.name == SPEC_FILE and path.is_file() else RunDir(path)
    return parse_spec(rundir.read_json(SPEC_FILE), rundir.file(SPEC_FILE))


def read_spec_if_any(rundir: RunDir) -> RunSpec | None:
    """The run's spec, or None when the directory has no spec.json (a run cut off before its first write)."""
    return read_spec(rundir.path) if rundir.file(SPEC_FILE).exists() else None


def spec_record(rundir: RunDir) -> dict[str, Any]:
    """The run's spec as the current format's JSON object (old formats upgraded, checked); ``{}`` without
    one."""
    spec = read_spec_if_any(rundir)
    return spec.record() if spec is not None else {}
