"""Bars with CI whiskers: heights and whisker lengths by hand, missing estimates, and what matplotlib
draws."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ruwikibench.evaluators.charts import ci_bars, whiskers
from ruwikibench.evaluators.stats import Estimate


def test_whiskers_by_hand() -> None:
    estimates = [
        Estimate(mean=0.5, low=0.4, high=0.7, n=10),
        None,
        Estimate(mean=0.0, low=0.0, high=0.0, n=0),
        Estimate(mean=0.2, low=0.25, high=0.3, n=3),
    ]  # a low above the mean never gives a negative whisker
    means, errors = whiskers(estimates, scale=100)
    assert means[0] == 50 and math.isnan(means[1]) and math.isnan(means[2]) and math.isclose(means[3], 20)
    np.testing.assert_allclose(errors, [[10, 0, 0, 0], [20, 0, 0, 10]], atol=1e-9)
    assert list(whiskers(estimates, missing=0.0)[0][1:3]) == [0.0, 0.0]


def test_ci_bars_draws_the_heights_and_whiskers() -> None:
    fig, ax = plt.subplots()
    estimates = [Estimate(mean=0.5, low=0.4, high=0.7, n=10), Estimate(mean=-0.2, low=-0.5, high=0.1, n=4)]
    bars = ci_bars(ax, [0, 1], estimates, horizontal=True, capsize=3)
    assert [round(b.get_width(), 6) for b in bars] == [0.5, -0.2]
    segments = [s for c in ax.collections for s in c.get_segments()]
    assert sorted((round(s[0][0], 6), round(s[1][0], 6)) for s in segments) == [(-0.5, 0.1), (0.4, 0.7)]
    plt.close(fig)
