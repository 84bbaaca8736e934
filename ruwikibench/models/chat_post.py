"""POST a chat-completions body as the openai SDK's ``AsyncOpenAI.post`` does, with the request built once.

For every call the SDK copies its request options twice, draws an idempotency key, merges and validates the
headers, parses the URL and wraps the answer in its response class: about a third of the event loop's time per
request at 256 requests in flight (py-spy on ``bench/scale.py`` at 64 articles: ``AsyncAPIClient.post`` 26 %
of the run process's samples, its ``_build_request`` 14 %). Here the SDK builds the first request of a client
(:meth:`ChatPost.post` goes through ``client.post`` while it has none); later requests copy its method, URL,
headers and timeout with the new body, are sent by the same HTTP client (its event hooks, its pools), and
their errors are raised as the SDK raises them (``_make_status_error_from_response``, ``APITimeoutError``,
``APIConnectionError``). A client whose requests may differ from call to call — an API-key provider, workload
identity, a provider runtime, custom auth — and any call with extra headers or query always take
``client.post``; an extra body is merged into the body as the SDK merges it.
"""

from __future__ import annotations

import functools
import json
from contextvars import ContextVar
from typing import Any

_PER_CALL_AUTH = ("_api_key_provider", "_provider_runtime", "_workload_identity_auth", "custom_auth")
PATH = "/chat/completions"
_CAPTURED: ContextVar[list[Any] | None] = ContextVar("ruwikibench_captured_request", default=None)
_PER_BODY_HEADERS = ("content-length", "transfer-encoding")  # set again from the new body


class ChatPost:
    """Chat-completion requests of one ``AsyncOpenAI`` client."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.template: Any = None  # the SDK's own first request (httpx Request)
        self.lean = (
            all(getattr(client, name, None) is None for name in _PER_CALL_AUTH)
            and _sdk_helpers() is not None
            and hasattr(client, "_prepare_request")
        )
        if self.lean:
            _capture_requests(client)

    async def post(
        self, body: dict[str, Any], extra_body: Any = None, extra_headers: Any = None, extra_query: Any = None
    ) -> Any:
        """The answer's JSON to ``body`` (``extra_*``: as ``chat.completions.create`` takes them;
        ``extra_body`` merged into the body as the SDK merges it)."""
        if not self.lean or extra_headers or extra_query or not isinstance(extra_body, dict | None):
            return await self.client.post(
                PATH,
                body=body,
                cast_to=object,
                options=request_options(extra_body, extra_headers, extra_query),
            )
        if extra_body:
            body = {**body, **extra_body}
        if self.template is None:
            return await self._first(body, request_options(None, None, None))
        return await self._send(body)

    async def _first(self, body: dict[str, Any], options: Any) -> Any:
        """The SDK's own request and answer; its request, as the SDK's ``_prepare_request`` hook sees it, kept
        as the template of the next ones (concurrent first calls each go through the SDK; the first to end
        keeps its)."""
        kept: list[Any] = []
        token = _CAPTURED.set(kept)
        try:
            answer = await self.client.post(PATH, body=body, cast_to=object, options=options)
        finally:
            _CAPTURED.reset(token)
        if len(kept) == 1 and self.template is None:
            self.template = kept[0]
        return answer

    async def _send(self, body: dict[str, Any]) -> Any:
        timeouts, connection_errors, status_errors, request_type = _sdk_helpers()  # type: ignore[misc]
        template, http = self.template, self.client._client
        headers = template.headers.copy()
        for name in _PER_BODY_HEADERS:
            headers.pop(name, None)
        request = request_type(
            template.method,
            template.url,
            headers=headers,
            content=json.dumps(body, ensure_ascii=False).encode(),
            extensions=dict(template.extensions),
        )
        try:
            response = await http.send(request)
        except timeouts as exc:
            raise _openai().APITimeoutError(request=request) from exc
        except _openai().OpenAIError:
            raise
        except connection_errors as exc:
            raise _openai().APIConnectionError(request=request) from exc
        try:
            response.raise_for_status()
        except status_errors as exc:
            if not exc.response.is_closed:
                await exc.response.aread()
            raise self.client._make_status_error_from_response(exc.response) from None
        return response.json()


def _capture_requests(client: Any) -> None:
    """The client's ``_prepare_request`` hook (called by the SDK with each request it built) also hands the
    request to the calling task's :data:`_CAPTURED` list, when the task set one."""
    original = client._prepare_request

    async def prepare(request: Any) -> None:
        kept = _CAPTURED.get()
        if kept is not None:
            kept.append(request)
        await original(request)

    client._prepare_request = prepare


@functools.cache
def _request_options_takes_security() -> bool:
    import inspect

    from openai._base_client import make_request_options

    return "security" in inspect.signature(make_request_options).parameters


def request_options(extra_body: Any, extra_headers: Any, extra_query: Any) -> Any:
    """The SDK's request options as ``chat.completions.create`` makes them (bearer auth, extra
    body/headers/query)."""
    from openai._base_client import make_request_options

    security: dict[str, Any] = (
        {"security": {"bearer_auth": True}} if _request_options_takes_security() else {}
    )
    return make_request_options(
        extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body, **security
    )


def _openai() -> Any:
    import openai

    return openai


@functools.cache
def _sdk_helpers() -> tuple[Any, Any, Any, Any] | None:
    """The SDK's exception classes for timeouts, connection errors and HTTP status errors and its Request
    class; None for an SDK that does not name them (every call then takes ``client.post``)."""
    try:
        from openai import _base_client as base
    except ImportError:
        return None
    names = ("timeout_exceptions", "request_exceptions", "status_exceptions")
    if not all(hasattr(base, name) for name in names):
        return None
    request_type = getattr(base, "httpx2", None) or getattr(base, "httpx", None)
    if request_type is None or not hasattr(request_type, "Request"):
        return None
    return (
        base.timeout_exceptions(),
        base.request_exceptions(),
        base.status_exceptions(),
        request_type.Request,
    )
