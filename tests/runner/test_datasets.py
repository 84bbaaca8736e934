"""--dataset: a JSON file, a processed directory, or hf://OWNER/NAME[/FILE] fetched from a hub (here a real
HTTP server on 127.0.0.1 standing in for it through HF_ENDPOINT)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ruwikibench.corpus_builder.dataset_files import DatasetError, resolve_dataset
from tests.corpus_builder.test_ruwikibench_json import record

PAYLOAD = json.dumps([record("Первая"), record("Вторая")], ensure_ascii=False).encode()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            found = self.path == "/datasets/owner/ruwikibench/resolve/main/ruwikibench_articles.json"
            self.send_response(200 if found else 404)
            self.send_header("Content-Length", str(len(PAYLOAD) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(PAYLOAD)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}/")
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path / "cache"))
    yield paths
    server.shutdown()
    server.server_close()


def test_hub_dataset_is_downloaded_once_then_read_from_the_cache(hub: list[str]) -> None:
    dataset, path = resolve_dataset("hf://owner/ruwikibench")
    assert [a.title for a in dataset.articles] == ["Первая", "Вторая"]
    again, path_again = resolve_dataset("hf://owner/ruwikibench")
    assert hub == ["/datasets/owner/ruwikibench/resolve/main/ruwikibench_articles.json"]  # one request only
    assert again.dataset_id == dataset.dataset_id and path_again == path


def test_missing_hub_file_and_unreachable_hub_are_clear_errors(hub: list[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(
        DatasetError,
        match=r"cannot download .*/datasets/owner/other/resolve/main/x\.json: the hub answered HTTP 404",
    ):
        resolve_dataset("hf://owner/other/x.json")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(DatasetError, match="hub is unreachable"):
        resolve_dataset("hf://owner/third")
    with pytest.raises(DatasetError, match="expected hf://OWNER/NAME"):
        resolve_dataset("hf://lonely")


def test_json_file_and_directory_resolve_to_the_same_dataset(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "sample.json"
    source.write_bytes(PAYLOAD)
    from_json, directory = resolve_dataset(str(source))
    from_dir, same = resolve_dataset(str(directory))
    assert from_dir.dataset_id == from_json.dataset_id and same == directory
    with pytest.raises(DatasetError, match="nothing.txt: no such file or directory"):
        resolve_dataset(str(tmp_path / "nothing.txt"))
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(DatasetError, match="not a processed dataset directory"):
        resolve_dataset(str(tmp_path / "notes.txt"))
