"""The settings of compared runs (from each run's spec.json) as a table: one row per setting the runs differ
in, one column per run, grouped (models, stage options, overrides, plug-in code, prompts, other); the settings
equal in every run are kept apart. report.md, settings.csv and report.html are all written from one
:class:`SettingsTable`."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel

from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import spec_record

IGNORED_SETTINGS = ("cache_dir", "options.out", "options.run_id")
GROUPS = ("models", "stage options", "overrides", "plug-in code", "prompts", "other")
JUDGE_OPTION_PREFIXES = ("citations.", "judges.", "stage_options.")
SHORT_VALUE = 40
"""HTML cells show this many characters of a value (the whole value on hover)."""
MARKDOWN_VALUE = 80
"""report.md shows this many characters of a value (settings.csv has it whole)."""


class SettingRow(BaseModel):
    """One setting: its group, its key and its value in each run (JSON, whole)."""

    group: str
    key: str
    values: list[str]


class SettingsTable(BaseModel):
    """The runs' settings: ``differing`` rows (group order, then key) and ``same`` rows (equal in every
    run)."""

    runs: list[str]
    differing: list[SettingRow]
    same: list[SettingRow]

    def by_group(self, rows: list[SettingRow]) -> list[tuple[str, list[SettingRow]]]:
        """``rows`` in :data:`GROUPS` order, empty groups left out."""
        grouped = defaultdict(list)
        for row in rows:
            grouped[row.group].append(row)
        return [(group, grouped[group]) for group in GROUPS if grouped[group]]

    def csv_rows(self) -> list[list[str]]:
        """Header first: group, setting, each run's whole value; the equal settings after the differing
        ones."""
        header = ["group", "setting", *self.runs, "same in all runs"]
        return [header] + [
            [row.group, row.key, *row.values, "yes" if same else ""]
            for rows, same in ((self.differing, False), (self.same, True))
            for row in rows
        ]

    def markdown(self) -> list[str]:
        """report.md's 'Settings' block: the differing settings as a table, the equal ones one line per
        group."""
        lines = ["## Settings", ""]
        if self.differing:
            header = ["setting", *self.runs]
            rows = [header]
            for group, members in self.by_group(self.differing):
                rows.append([f"**{group}**", *[""] * len(self.runs)])
                rows += [
                    [f"`{row.key}`", *[_md(shorten(v, MARKDOWN_VALUE)) for v in row.values]]
                    for row in members
                ]
            lines += [_markdown_table(rows), ""]
        elif len(self.runs) > 1:
            lines += ["The runs differ in no setting.", ""]
        if self.same:
            where = "all runs" if len(self.runs) > 1 else "the run"
            count = f"{len(self.same)} setting{'s' * (len(self.same) != 1)}"
            lines += [
                f"<details><summary>{count} equal in {where} (whole values in settings.csv)</summary>",
                "",
            ]
            lines += [
                f"- {group}: "
                + "; ".join(f"`{r.key}`={_md(shorten(r.values[0], MARKDOWN_VALUE))}" for r in members)
                for group, members in self.by_group(self.same)
            ]
            lines += ["", "</details>", ""]
        return lines


def shorten(value: str, limit: int) -> str:
    """``value`` cut to ``limit`` characters with '…' when longer."""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])


ABSENT = "—"
"""A setting a run does not have (an older run, or no override where another run has one)."""
CODE_PREFIX = "stage_code."
PROMPT_HASH_PREFIX = "prompt_sha256."
SHORT_HASH = 12


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys, one per leaf. An empty dict is no setting: ``overrides: {}`` beside a run
    with ``overrides.ranking.judge`` would otherwise be a row ``overrides`` showing ``{}`` and null."""
    if isinstance(data, dict):
        flat: dict[str, Any] = {}
        for key, value in data.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): data} if prefix else {}


def _short(sha: Any) -> str:
    return str(sha or "")[:SHORT_HASH]


def code_digest(code: dict[str, Any]) -> str:
    """A plug-in stage's code as one short hash: its file's sha256, or with a ``files`` map (path ->
    sha256) the hash of all of them (paths left out: moving a checkout changes nothing)."""
    files = code.get("files")
    if isinstance(files, dict) and files:
        joined = json.dumps(sorted(str(v) for v in files.values())).encode()
        return _short(hashlib.sha256(joined).hexdigest())
    return _short(code.get("sha256"))


def identity_settings(spec: dict[str, Any]) -> dict[str, str]:
    """Plug-in stages' code (``stage_code.<stage>``: its hash first, so a shortened cell still shows it, then
    the class and the distribution's version when installed) and every prompt file's sha256
    (``prompt_sha256.<file>``: the plug-in stages' declared prompts and the prompts the run's sessions
    read), so two versions of a plug-in are told apart."""
    flat: dict[str, str] = {}
    prompts: dict[str, Any] = dict(spec.get("prompts") or {})
    for stage, record in (spec.get("stage_identity") or {}).items():
        code = record.get("code")
        if isinstance(code, dict):
            version = f" ({code['distribution']} {code.get('version')})" if code.get("distribution") else ""
            flat[f"{CODE_PREFIX}{stage}"] = f"{code_digest(code)} {code.get('qualname', '')}{version}"
        prompts |= record.get("prompts") or {}
    flat |= {f"{PROMPT_HASH_PREFIX}{name}": _short(sha) for name, sha in sorted(prompts.items())}
    return flat


def read_spec(rundir: RunDir) -> dict[str, Any]:
    """The run's spec.json in the current format (old formats upgraded; {} for a run directory without
    one)."""
    return spec_record(rundir)


def spec_settings(spec: dict[str, Any]) -> dict[str, Any]:
    """A run's settings, flat: the config's keys, ``dataset`` (its id), ``options.*``, the overrides' code
    hashes (``override.<key>.sha256``), plug-in stages' code and the prompt files' hashes
    (:func:`identity_settings`)."""
    overrides = {
        f"override.{key}.sha256": (o.get("sha256") or "")[:12] for key, o in spec.get("overrides", {}).items()
    }
    dataset = {"dataset": spec["dataset"].get("id")} if spec.get("dataset") else {}
    config = _aliased(spec.get("config", {}))
    flat = (
        _flatten(config)
        | dataset
        | _flatten(spec.get("options", {}), "options.")
        | overrides
        | identity_settings(spec)
    )
    return {key: value for key, value in flat.items() if not key.startswith(IGNORED_SETTINGS)}


def _alias_stages() -> list[str]:
    """The stages whose options a config may give at its top level (``options_alias``: the built-in ones)."""
    from ruwikibench.stage.registry import options_stages

    return [stage.name for stage in options_stages() if stage.options_alias]


def _aliased(config: dict[str, Any]) -> dict[str, Any]:
    """A recorded config with the options of the stages in :func:`_alias_stages` under their top-level keys,
    as runs recorded them before ``stage_options``: old and new runs show the same setting under one name."""
    blocks = config.get("stage_options")
    if not isinstance(blocks, dict):
        return config
    moved = {name: blocks[name] for name in _alias_stages() if name in blocks}
    rest = {name: block for name, block in blocks.items() if name not in moved}
    return {**{k: v for k, v in config.items() if k != "stage_options"}, **moved, "stage_options": rest}


def setting_group(key: str) -> str:
    """The group a setting is shown in: models (and the embedder), stage options, overrides, prompts,
    other."""
    if key.startswith(CODE_PREFIX):
        return "plug-in code"
    if key.startswith(PROMPT_HASH_PREFIX):
        return "prompts"
    last = key.rsplit(".", 1)[-1]
    if "prompt" in last and not key.startswith("embedder."):
        return "prompts"
    if key.startswith(("models.", "embedder.")):
        return "models"
    if key == "overrides" or key.startswith(("override.", "overrides.")):
        return "overrides"
    stage_prefixes = tuple(f"{name}." for name in _alias_stages()) + JUDGE_OPTION_PREFIXES
    if key.startswith(stage_prefixes) or key in ("stages", "profile"):
        return "stage options"
    return "other"


def _value(settings: dict[str, Any], key: str) -> str:
    """A setting as shown: a string as it is, anything else (numbers, lists, null) as JSON; :data:`ABSENT`
    when the run has no such setting."""
    if key not in settings:
        return ABSENT
    value = settings.get(key)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _merge_model_roles(rows: list[SettingRow], roles: list[str]) -> list[SettingRow]:
    """``models.<role>.<field>`` rows with the same values in every run merged into one row,
    ``models.*.<field>`` (every role) or ``models.{a,b}.<field>``."""
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    out: list[SettingRow] = []
    for row in rows:
        parts = row.key.split(".", 2)
        if row.group == "models" and parts[0] == "models" and len(parts) == 3 and parts[1] in roles:
            merged[(parts[2], tuple(row.values))].append(parts[1])
        else:
            out.append(row)
    for (field, values), members in merged.items():
        who = (
            "*"
            if len(members) == len(roles) > 1
            else members[0]
            if len(members) == 1
            else "{" + ",".join(members) + "}"
        )
        out.append(SettingRow(group="models", key=f"models.{who}.{field}", values=list(values)))
    return sorted(out, key=lambda row: (GROUPS.index(row.group), row.key))


def settings_table(runs: list[tuple[str, dict[str, Any], RunDir]]) -> SettingsTable:
    """The runs' settings: the rows in which they differ and the rows equal in all of them."""
    flat = [spec_settings(read_spec(rundir)) for _, _, rundir in runs]
    keys = sorted({key for settings in flat for key in settings})
    roles = sorted({key.split(".")[1] for key in keys if key.startswith("models.") and key.count(".") >= 2})
    differing: list[SettingRow] = []
    same: list[SettingRow] = []
    for key in keys:
        values = [_value(settings, key) for settings in flat]
        row = SettingRow(group=setting_group(key), key=key, values=values)
        (same if len(set(values)) == 1 else differing).append(row)
    return SettingsTable(
        runs=[name for name, _, _ in runs],
        differing=_merge_model_roles(differing, roles),
        same=_merge_model_roles(same, roles),
    )
