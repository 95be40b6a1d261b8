"""The fit-and-residuals figure: it draws the residuals it is given models for (model / measured - 1, in
percent, at the measured sizes, checked against numpy), names a protocol-aware fit's regimes, and refuses bad
input with a sentence."""
from __future__ import annotations

import numpy as np
import pytest

from commlab import cost
from commlab.errors import CommlabError
from commlab.viz import png_bytes
from commlab.viz.fit_view import plot_fit_residuals

SIZES = 2.0 ** np.arange(3, 27, 2)
TIMES = np.minimum(5e-6 + SIZES / 2e9, 30e-6 + SIZES / 20e9) * (1 + 0.03 * np.sin(np.arange(SIZES.size)))


def test_the_residuals_drawn_are_model_over_measured_minus_one():
    fit = cost.fit_protocol_model(SIZES, TIMES, max_regimes=2)
    line = cost.fit_alpha_beta(SIZES, TIMES)
    fig = plot_fit_residuals(SIZES[::-1], TIMES[::-1], {"line": line.time_s, "regimes": fit.time_s}, fit=fit,
                             marks=[(2.0**14, "a switch")], title="made up")
    bottom = fig.axes[1]
    drawn = {ln.get_label(): ln.get_ydata() for ln in bottom.get_lines() if ln.get_label() in ("line", "regimes")}
    np.testing.assert_allclose(drawn["line"], (line.time_s(SIZES) / TIMES - 1) * 100, rtol=1e-12)
    np.testing.assert_allclose(drawn["regimes"], (fit.time_s(SIZES) / TIMES - 1) * 100, rtol=1e-12)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"small", "large", "a switch"} <= labels
    assert png_bytes(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("nbytes, t_s, models, says", [
    (SIZES, TIMES[:-1], {"m": np.ones_like}, "one time per size"),
    (SIZES, -TIMES, {"m": np.ones_like}, "must be > 0"),
    (SIZES, TIMES, {}, "at least one model"),
])
def test_bad_input_says_what_is_wrong(nbytes, t_s, models, says):
    with pytest.raises(CommlabError, match=says):
        plot_fit_residuals(nbytes, t_s, models)

