"""Secrets kept out of run files, reports, logs and error lines.

A value is secret when the config expanded it from an environment variable whose name looks like one
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, any case) or when a model's ``api_key_env`` names its
variable. Such values are registered here; everything the package writes (JSONL lines, JSON and text files,
``error:`` lines, log records) passes through :func:`redact`, which replaces each by ``***``.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

MASK = "***"
MIN_LENGTH = 4  # shorter values ("1", "on") would mask ordinary text
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
_values: set[str] = set()


def looks_secret(name: str) -> bool:
    """True for an environment variable name that looks like it holds a secret."""
    return bool(_SECRET_NAME.search(name))


def register(value: str | None) -> None:
    """Redact ``value`` from now on (values shorter than :data:`MIN_LENGTH` are ignored)."""
    if value and len(value) >= MIN_LENGTH:
        _values.add(value)


def register_env(name: str | None) -> None:
    """Redact the value of environment variable ``name`` (when set)."""
    if name:
        register(os.environ.get(name))


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (longest first)."""
    if not _values:
        return text
    for value in sorted(_values, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def redact_data(data: Any) -> Any:
    """A copy of JSON-like ``data`` with every string redacted (keys too)."""
    if not _values:
        return data
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k): redact_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_data(v) for v in data]
    return data


def install_log_redaction() -> None:
    """Every log record created from now on carries its message redacted (whatever logger or handler)."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "redacts", False):
        return

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        if _values:
            record.msg, record.args = redact(record.getMessage()), None
        return record

    make.redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(make)
