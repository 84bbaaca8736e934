"""Secrets kept out of run files, caches, reports, logs and error lines.

A value is secret when the config expanded it from an environment variable whose name looks like one
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*AUTH*``, ``*CREDENTIAL*``, any case), when a model's
``api_key_env`` names its variable, when it is a model's header value (every one, literal or
``${VAR}``-filled), or when it is an endpoint URL's credentials (``user:pass@``) or a secret-looking query
parameter's value (``?key=``, ``?token=``, ``?sig=`` …): :func:`register_model` registers all of a model's.
Everything the package writes (JSONL lines, JSON and text files, response-cache rows, ``error:`` lines, log
records) passes through :func:`redact`, which replaces each by ``***``.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

MASK = "***"
MIN_LENGTH = 4  # shorter values ("1", "on") would mask ordinary text
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH(?!OR)|CREDENTIAL", re.IGNORECASE)
_SECRET_QUERY = re.compile(r"^(sig|signature|code|pass|pwd|session)$", re.IGNORECASE)
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


def secret_query(name: str) -> bool:
    """True for a URL query parameter whose value is a secret (``key``, ``api-key``, ``token``, ``sig`` …)."""
    return looks_secret(name) or bool(_SECRET_QUERY.match(name))


def register_url(url: str) -> None:
    """Redact ``url``'s credentials (``user:pass@``, the pair and the password) and the values of its
    secret-looking query parameters (raw and percent-decoded)."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        register(userinfo)
        register(unquote(userinfo))
        password = userinfo.partition(":")[2]
        register(password)
        register(unquote(password))
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if value and secret_query(unquote(name)):
            register(value)
            register(unquote(value))


def register_headers(headers: dict[str, str]) -> None:
    """Redact every header value, and the credential of an ``Authorization``-style ``scheme credential``
    value."""
    for value in headers.values():
        register(value)
        scheme, _, credential = value.strip().partition(" ")
        if scheme and credential:
            register(credential.strip())


def register_model(endpoints: list[str], headers: dict[str, str]) -> None:
    """Register every secret of one model's connection settings (its endpoints and headers)."""
    for url in endpoints:
        register_url(url)
    register_headers(headers)


def without_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without ``user:pass@``, and the ``user:pass`` it had (percent-decoded; None when none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), f"{unquote(user)}:{unquote(password)}"


def query_of(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query, and the query's parameters (an OpenAI client's ``default_query``)."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    return urlunsplit(parts._replace(query="")), dict(parse_qsl(parts.query, keep_blank_values=True))


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
