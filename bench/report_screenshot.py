"""The README's screenshots of the HTML report: `ruwikibench report RUN...` into a folder, then report.html
and one article page shot by headless Chromium (offline) and saved as small palette PNGs.

    python bench/report_screenshot.py runs/<main job run> [RUN ...] [--out /tmp/report-shot] \
        [--img docs/img] [--article 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image

from ruwikibench.reporting.browser import screenshot
from ruwikibench.reporting.compare import compare_runs


def shrink(path: Path, colours: int = 128) -> Path:
    """Rewrite ``path`` as a palette PNG (screenshots are flat colours: a fraction of the size, same look)."""
    with Image.open(path) as image:
        image.convert("RGB").quantize(colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/report-shot"))
    parser.add_argument("--img", type=Path, default=Path("docs/img"))
    parser.add_argument("--article", type=int, default=1, help="the article page to shoot (its number)")
    args = parser.parse_args()
    compare_runs(args.runs, args.out)
    shots = [
        screenshot(args.out / "report.html", args.img / "report.png", width=1280, height=1500),
        screenshot(
            args.out / "articles" / f"a{args.article:04d}.html",
            args.img / "report-article.png",
            width=1280,
            height=1500,
        ),
    ]
    for shot in shots:
        shrink(shot)
        print(f"{shot}: {shot.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
