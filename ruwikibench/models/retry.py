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


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors it was raised from: ``__cause__`` links, and ``__context__`` where an error
    names no cause and does not suppress its context; at most 32."""
    chain = [exc]
    while len(chain) < 32:
        last = chain[-1]
        inner = last.__cause__ or (None if last.__suppress_context__ else last.__context__)
        if inner is None or inner in chain:
            break
        chain.append(inner)
    return chain


def _root_cause(exc: BaseException) -> str:
    """`` (cause: …)`` saying plainly why a request failed — the HTTP status, ``connection refused``, ``cannot
    connect``, a timeout (the SDK's own message hides it: the aiohttp transport reports a refused connection
    as a timeout) — else the deepest error of the chain when its message says more; empty when there is none.
    Only the request's own errors are read: a ``__context__`` that happened to be handled nearby (a
    ``RuntimeError: no running event loop`` inside the transport) is never named."""
    chain = _chain(exc)
    status = next((code for e in chain if (code := status_of(e)) is not None), None)
    if status is not None and status_of(exc) is not None:
        return ""  # the error itself carries the status and the server's message
    if status is not None:
        detail = next((str(e) for e in chain if status_of(e) is not None), "")
        return f" (cause: HTTP {status} from the server: {_short(detail)})"
    refused = next((e for e in chain if isinstance(e, ConnectionRefusedError)), None)
    if refused is not None:
        return f" (cause: connection refused: {_short(str(refused))})"
    unreachable = next((e for e in chain if _is_connect_error(e)), None)
    if unreachable is not None:
        return f" (cause: cannot connect: {_short(str(unreachable))})"
    timeout = next((e for e in reversed(chain) if _is_timeout(e)), None)
    if timeout is not None:
        return f" (cause: timeout, no answer in time: {_short(str(timeout) or type(timeout).__name__)})"
    root = _chain_of_causes(exc)[-1]
    if root is exc or str(root) in str(exc) or isinstance(root, RuntimeError):
        return ""
    return f" (cause: {type(root).__name__}: {_short(str(root))})"


def _chain_of_causes(exc: BaseException) -> list[BaseException]:
    chain = [exc]
    while (inner := chain[-1].__cause__) is not None and inner not in chain and len(chain) < 32:
        chain.append(inner)
    return chain


def _short(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _is_connect_error(exc: BaseException) -> bool:
    """A connection that could not be made (DNS, route, reset while connecting), whatever the HTTP library."""
    name = type(exc).__name__
    return isinstance(exc, ConnectionError | httpx.ConnectError) or name in (
        "ClientConnectorError",
        "gaierror",
    )


def _is_timeout(exc: BaseException) -> bool:
    return (
        isinstance(exc, TimeoutError | asyncio.TimeoutError | httpx.TimeoutException)
        or "Timeout" in type(exc).__name__
    )


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
