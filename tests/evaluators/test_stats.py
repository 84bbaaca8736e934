import numpy as np

from ruwikibench.evaluators.stats import bootstrap_ci


def test_bootstrap_mean_is_sample_mean_and_ci_brackets_it() -> None:
    values = list(np.linspace(0, 1, 50))
    est = bootstrap_ci(values)
    assert abs(est.mean - 0.5) < 1e-12 and est.low < 0.5 < est.high and est.n == 50
    # normal approximation of the 95% interval: mean ± 1.96·sd/√n
    half = 1.96 * np.std(values, ddof=1) / np.sqrt(len(values))
    assert abs((est.high - est.low) / 2 - half) < 0.02


def test_bootstrap_edge_cases() -> None:
    assert bootstrap_ci([]).n == 0
    single = bootstrap_ci([0.3])
    assert single.low == single.high == 0.3
