"""bench/scale.py's memory figures: the lifetime peak covers the whole process (a spike between two samples,
the start-up before the sampler) and names its phase; bench/pipeline.py's call levels are read a line at a
time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.pipeline import call_levels, unit_levels

ROOT = Path(__file__).resolve().parents[2]
linux = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")


def _child(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@linux
def test_a_spike_between_samples_is_the_lifetime_peak_of_its_phase() -> None:
    """300 MB touched and freed well inside one 2-second interval: the peak and its phase are found, and the
    phases around it stay far below."""
    figures = _child("""
        import json, sys, time
        sys.path.insert(0, ".")
        from bench.scale import MemoryTrace
        trace = MemoryTrace(every=2.0)
        time.sleep(0.3)
        calm = time.perf_counter()
        time.sleep(2.5)
        block = bytearray(300 << 20)
        block[::4096] = b"x" * len(block[::4096])
        del block
        spike = time.perf_counter()
        time.sleep(2.5)
        trace.stop()
        mb, phase = trace.lifetime({"calm": calm, "spike": spike, "after": float("inf")})
        print(json.dumps({"mb": mb, "phase": phase, "after": trace.peak(spike + 2.1, float("inf"))}))
    """)
    assert figures["mb"] >= 300 and figures["phase"] == "spike"
    assert figures["after"] < 200  # type: ignore[operator]


@linux
def test_the_start_up_before_the_sampler_counts() -> None:
    """Memory used and freed before the trace starts (imports, the dataset before the sampler) is in the first
    sample: the lifetime peak is not the peak of the sampled intervals only."""
    figures = _child("""
        import json, sys
        sys.path.insert(0, ".")
        block = bytearray(250 << 20)
        block[::4096] = b"x" * len(block[::4096])
        del block
        from bench.scale import MemoryTrace
        trace = MemoryTrace(every=0.2)
        trace.stop()
        mb, phase = trace.lifetime({"start-up": float("inf")})
        print(json.dumps({"mb": mb, "phase": phase}))
    """)
    assert figures["mb"] >= 250 and figures["phase"] == "start-up"


@linux
def test_a_child_process_counts_in_the_peak() -> None:
    """A child started after the sampler (as the scoring process is) that touches 300 MB: its peak is summed
    in."""
    figures = _child("""
        import json, subprocess, sys, time
        sys.path.insert(0, ".")
        from bench.scale import MemoryTrace
        trace = MemoryTrace(every=0.2)
        time.sleep(0.3)
        subprocess.run([sys.executable, "-c", "import time; b = bytearray(300 << 20); b[::4096] = b'x' * \
len(b[::4096]); "
                        "time.sleep(3)"], check=True)
        trace.stop()
        print(json.dumps({"children": trace.children_peak, "mb": trace.lifetime({"all": float("inf")})[0]}))
    """)
    assert figures["children"] >= 300 and figures["mb"] >= 300


def test_call_levels_reads_the_outputs_a_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {
            "stage": "ranking",
            "article": "A",
            "unit": "u",
            "output": {"query_mode": "generated", "candidates": [1, 2, 3]},
        },
        {
            "stage": "outline",
            "article": "B",
            "unit": "v",
            "output": {"cluster_results": [{"description": "d"}, {"description": "e"}]},
        },
    ]
    (tmp_path / "outputs.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) + "\n", encoding="utf-8"
    )

    def whole(*args: object, **kwargs: object) -> None:
        raise AssertionError("outputs.jsonl read whole")

    monkeypatch.setattr(Path, "read_text", whole)
    levels, where = call_levels(tmp_path, chunk=10)
    assert levels == unit_levels("ranking", rows[0]["output"], 10) + unit_levels(
        "outline", rows[1]["output"], 10
    )
    assert where == "outline / B / v"  # the deepest chain: describe → mini-outline → merge
