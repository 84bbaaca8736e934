"""README = CI: `.ci/run` installs exactly what the README's first command installs (the same CMAKE_ARGS, the
same extras), and those extras hold what the README's test command needs."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _joined(text: str) -> str:
    """Shell text with its line continuations joined."""
    return re.sub(r"\\\n\s*", " ", text)


def _readme_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## The two commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return _joined(block)


def _cmake_args(text: str) -> list[str]:
    match = re.search(r'CMAKE_ARGS="([^"]*)"', text)
    assert match, "no CMAKE_ARGS"
    return match.group(1).split()


def _installs(text: str) -> list[str]:
    """The targets of every `pip install` of the text (options left out)."""
    targets: list[str] = []
    for match in re.finditer(r"pip install ([^&\n]*)", text):
        targets += [word for word in shlex.split(match.group(1)) if not word.startswith("-")]
    return targets


def test_ci_installs_what_the_readme_installs() -> None:
    readme, ci = _readme_command(), _joined((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert _cmake_args(ci) == _cmake_args(readme)
    assert _installs(ci) == _installs(readme) == ["pip", ".[dev,local]"]


def test_the_build_leaves_native_and_amx_out() -> None:
    """-march=native compiles ggml's AMX kernels on a CPU that reports AMX whatever GGML_AMX_* say."""
    args = _cmake_args(_readme_command())
    for flag in ("GGML_NATIVE", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"):
        assert f"-D{flag}=OFF" in args


def test_extras_hold_what_the_tests_install_with() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert "wheel" in extras["dev"]  # tests/examples/test_lead_plugin.py: pip install --no-build-isolation
    assert "ruwikibench[score]" in extras["local"]
    assert not any(req.startswith("llama-cpp-python") for req in extras["score"])
    assert {req.split("==")[0] for req in extras["score"]} == {"onnx", "onnxruntime"}
    assert any(req.startswith("pandas") for req in extras["notebook"])


def test_docs_that_use_pandas_name_the_extra_that_installs_it() -> None:
    """pandas is no dependency of ruwikibench: a README or docs passage whose code uses it (``import pandas``,
    ``pd.DataFrame``) names the ``notebook`` extra within the same paragraph or the one before its code."""
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for use in re.finditer(r"import pandas|pd\.DataFrame", text):
            found += 1
            before = text[max(0, use.start() - 700) : use.start()]
            paragraph = text[use.start() : text.find("\n\n", use.start())]
            assert "[notebook]" in before + paragraph, (
                f"{page.name}: pandas used without naming the notebook extra"
            )
    assert found >= 2  # the Python API example and the README's pointer to it
