"""Which request failures are worth retrying, and how long to wait before the next attempt."""

from __future__ import annotations

import asyncio
import random

import httpx

RETRY_STATUS = frozenset({408, 409, 425, 429})


class LLMRequestError(RuntimeError):
    """A chat request failed for good (not retryable, or retries used up). Names model, endpoint, attempts."""

    def __init__(self, model: str, endpoint: str, attempts: int, cause: BaseException) -> None:
        self.model = model
        self.endpoint = endpoint
        self.attempts = attempts
        self.status_code: int | None = getattr(cause, "status_code", None)
        status = f" (HTTP {self.status_code})" if self.status_code else ""
        super().__init__(
            f"model {model!r} at {endpoint}: request failed after {attempts} attempt(s){status}: "
            f"{type(cause).__name__}: {cause}{_root_cause(cause)}"
        )


def _root_cause(exc: BaseException) -> str:
    """`` (cause: …)`` naming the first error of the chain when the SDK's own message hides it (the aiohttp
    transport reports a refused connection as a timeout); empty when there is none."""
    root = exc
    while (inner := root.__cause__ or root.__context__) is not None and inner is not root:
        root = inner
    if root is exc or str(root) in str(exc):
        return ""
    return f" (cause: {type(root).__name__}: {root})"


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an openai/httpx error, if it has one."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None) if response is not None else None


def is_retryable(exc: BaseException) -> bool:
    """429, 408/409/425, any 5xx, connection errors and timeouts."""
    import openai

    if isinstance(exc, (openai.APIConnectionError, httpx.TransportError, asyncio.TimeoutError, TimeoutError)):
        return True
    status = status_of(exc)
    return status is not None and (status in RETRY_STATUS or status >= 500)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` / ``retry-after`` in seconds), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            return None  # an HTTP date: fall back to our own backoff
    return None


def backoff_delay(attempt: int, base: float, cap: float, exc: BaseException | None = None) -> float:
    """Wait before retry number ``attempt + 1``: the server's Retry-After if given, else
    ``base · 2^attempt`` with jitter in [50 %, 100 %]; never above ``cap``."""
    asked = retry_after(exc) if exc is not None else None
    if asked is not None:
        return min(asked, cap)
    return min(cap, base * (2**attempt)) * random.uniform(0.5, 1.0)
