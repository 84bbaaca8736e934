"""A run killed with SIGKILL and started again finishes without recomputing units or resending requests."""

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog
from tests.fake_openai import StubServer, serving

JOB = Path(__file__).with_name("resume_job.py")


def _prompts(stub: StubServer) -> collections.Counter:
    return collections.Counter(body["messages"][-1]["content"] for body in stub.requests)


def test_kill_9_then_resume_sends_no_request_twice(tmp_path: Path) -> None:
    stub = StubServer(delay=0.4)
    args = [sys.executable, str(JOB), str(tmp_path / "runs"), str(tmp_path / "cache")]
    with serving(stub):
        args.insert(2, stub.base_url)
        job = subprocess.Popen(args, start_new_session=True)
        deadline = time.monotonic() + 60
        while len(stub.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)  # let the third answer be in flight
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        sent_before = _prompts(stub)
        assert 3 <= sum(sent_before.values()) < 6, "the job must be killed mid-run"
        outputs = tmp_path / "runs" / "r" / "outputs.jsonl"
        finished_before = len(outputs.read_text().splitlines()) if outputs.exists() else 0

        subprocess.run(args, check=True, timeout=120)

    sent = _prompts(stub)
    assert len(sent) == 6  # every article asked once …
    resent = sum(sent.values()) - 6
    assert resent <= 1  # … except at most the one request in flight at the kill (max_concurrency = 1)
    lines = [json.loads(x) for x in outputs.read_text().splitlines()]
    assert len(lines) == 6 and len({x["article"] for x in lines}) == 6  # no unit ran twice
    assert finished_before >= 2
    results = (tmp_path / "runs" / "r" / "results.jsonl").read_text().splitlines()
    assert len(results) == 6
    # the messages of the units finished before the kill were kept then; the resumed run appended the others
    log = CallLog(tmp_path / "runs" / "r" / MESSAGES_DIR)
    kept = {x["article"]: log.calls("toy", x["article"]) for x in lines}
    assert all([c["messages"][-1]["content"] for c in calls] == [f"Опиши: {a}"] for a, calls in kept.items())
