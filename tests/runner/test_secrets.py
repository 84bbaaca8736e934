"""Secrets expanded into a config (a token in an endpoint URL, a key in a header, the api_key_env variable)
never reach spec.json, the other run files, the reports, the console or the logs — while the endpoint does get
them."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import yaml

from ruwikibench.conf.secrets import MASK, install_log_redaction, looks_secret, redact, register
from ruwikibench.corpus_builder.store import save_dataset
from tests.cli.test_input_errors import cli
from tests.fake_openai import StubServer, serving
from tests.graphs.writer_fixture import make_dataset

TOKEN, HEADER_KEY, API_KEY = "tok-planted-7f3a91", "hdr-planted-55c2e0", "api-planted-19bb04"


def _files(root: Path) -> dict[Path, str]:
    """Every file's text (gzip'ed files, such as the messages the run kept, decompressed)."""
    return {p: _bytes(p).decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()}


def _bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def test_planted_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    save_dataset(make_dataset(), tmp_path / "data")
    stub = StubServer(answer=lambda body: "Да", synthetic_logprobs=False)
    with serving(stub):
        url = stub.base_url.replace("/v1", "/gw/${RWB_TEST_URL_TOKEN}/v1")  # a gateway token in the path
        model = {
            "name": "fake",
            "endpoints": [url],
            "max_retries": 0,
            "timeout": 10,
            "api_key_env": "RWB_API",
            "headers": {"X-Gateway-Key": "${RWB_GATEWAY_KEY}"},
        }
        config = {
            "name": "s",
            "models": {"writer": model},
            "cache_dir": str(tmp_path / "cache"),
            "ranking": {"query_mode": "title"},
        }
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {"RWB_TEST_URL_TOKEN": TOKEN, "RWB_GATEWAY_KEY": HEADER_KEY, "RWB_API": API_KEY}
        result = cli(
            tmp_path, "run", "ranking", "--dataset", "data", "--config", "c.yaml", "--run-id", "r", env=env
        )
        assert result.returncode == 0, result.stdout + result.stderr
        report = cli(tmp_path, "report", "runs/r", "--out", "cmp", env=env)
        assert report.returncode == 0, report.stderr
    sent = [{k.lower(): v for k, v in h.items()} for h in stub.headers]
    assert sent and all(h.get("x-gateway-key") == HEADER_KEY for h in sent)  # the plants are real
    assert all(h.get("authorization") == f"Bearer {API_KEY}" for h in sent)
    files = _files(tmp_path / "runs") | _files(tmp_path / "cmp")
    assert any(p.suffix == ".gz" and "Да" in text for p, text in files.items())  # the messages kept, read
    spec = files[tmp_path / "runs" / "r" / "spec.json"]
    assert f"/gw/{MASK}/v1" in spec and f'"X-Gateway-Key": "{MASK}"' in spec
    for secret in (TOKEN, HEADER_KEY, API_KEY):
        leaks = [str(p) for p, text in files.items() if secret in text]
        assert not leaks, (secret, leaks)
        assert secret not in result.stdout + result.stderr + report.stdout + report.stderr


def test_error_lines_and_logs_are_redacted(tmp_path: Path, capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    from ruwikibench.cli.console import print_error

    assert looks_secret("MY_API_KEY") and looks_secret("hf_token") and looks_secret("DB_PASSWORD")
    assert not looks_secret("HOME") and not looks_secret("RUWIKIBENCH_CACHE")
    register("line-secret-0042")
    print_error("connection to http://u:line-secret-0042@host failed")
    assert capsys.readouterr().err == f"error: connection to http://u:{MASK}@host failed\n"
    install_log_redaction()
    with caplog.at_level(logging.WARNING):
        logging.getLogger("ruwikibench.test").warning("endpoint %s refused", "http://x/line-secret-0042")
    assert caplog.records[-1].getMessage() == f"endpoint http://x/{MASK} refused"
    assert redact("no secret here") == "no secret here"


USER_PASS, QUERY_KEY = "pw-planted-3d8e21", "qk-planted-a04c77"
LITERAL, GATEWAY_AUTH = "lit-planted-6b1f02", "gw-planted-e9d345"


def test_url_credentials_query_keys_and_every_header_value_are_redacted(tmp_path: Path) -> None:
    """``user:pass@`` and ``?key=`` in the endpoint, a literal header and one filled from a variable whose
    name does not look secret: the endpoint gets them all (the credentials as a Basic header), and not one
    reaches the run directory (spec, errors, results), the response cache, the report or the console."""
    import base64

    from tests.fake_openai import Failure

    save_dataset(make_dataset(), tmp_path / "data")
    stub = StubServer(answer=lambda body: "Да", synthetic_logprobs=False, failures=[Failure(500)])
    with serving(stub):
        url = f"http://bench:{USER_PASS}@127.0.0.1:{stub.port}/v1?key={QUERY_KEY}&mode=fast"
        model = {
            "name": "fake",
            "endpoints": [url],
            "max_retries": 0,
            "timeout": 10,
            "headers": {"X-Org-Secret": LITERAL, "X-Gw": "${RWB_GW_VALUE}"},
        }
        config = {
            "name": "s",
            "models": {"writer": model},
            "cache_dir": str(tmp_path / "cache"),
            "ranking": {"query_mode": "title"},
        }
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {"RWB_GW_VALUE": GATEWAY_AUTH}
        args = ("run", "ranking", "--dataset", "data", "--config", "c.yaml", "--run-id", "r")
        first = cli(tmp_path, *args, env=env)  # one request fails: its error line names the endpoint
        assert first.returncode == 0, first.stdout + first.stderr
        assert "failed 1" in first.stdout
        second = cli(tmp_path, *args, env=env)  # the same run id resumes
        assert second.returncode == 0, second.stdout + second.stderr
        report = cli(tmp_path, "report", "runs/r", "--out", "cmp", env=env)
        assert report.returncode == 0, report.stderr
    sent = [{k.lower(): v for k, v in h.items()} for h in stub.headers]
    basic = "Basic " + base64.b64encode(f"bench:{USER_PASS}".encode()).decode()
    assert sent and all(h.get("authorization") == basic for h in sent)  # user:pass@ works
    assert all(h.get("x-org-secret") == LITERAL and h.get("x-gw") == GATEWAY_AUTH for h in sent)
    assert all(p == f"/v1/chat/completions?key={QUERY_KEY}&mode=fast" for p in stub.paths)
    files = _files(tmp_path / "runs") | _files(tmp_path / "cmp") | _files(tmp_path / "cache")
    assert any(p.suffix in (".sqlite", ".db") or "cache" in p.parts for p in files)
    console = "".join(r.stdout + r.stderr for r in (first, second, report))
    for secret in (USER_PASS, QUERY_KEY, LITERAL, GATEWAY_AUTH, basic.split()[1]):
        leaks = [str(p) for p, text in files.items() if secret in text]
        assert not leaks, (secret, leaks)
        assert secret not in console, secret
    named = [p.name for p, text in files.items() if f"127.0.0.1:{stub.port}/v1?key={MASK}" in text]
    assert named  # the failed request's record names its endpoint, masked


def test_url_credentials_with_another_authorization_are_refused(tmp_path: Path) -> None:
    from ruwikibench.conf.config import ConfigError
    from ruwikibench.conf.loader import config_from_data

    model = {"name": "m", "endpoints": ["http://u:p4ss-word@h/v1"], "api_key_env": "SOME_KEY"}
    try:
        config_from_data({"name": "x", "models": {"writer": model}}, "c.yaml")
    except ConfigError as exc:
        assert str(exc) == (
            "c.yaml: models.writer.endpoints.0: credentials in the URL (user:pass@) and api_key_env both set "
            "the Authorization header; keep one"
        )
    else:
        raise AssertionError("accepted")
