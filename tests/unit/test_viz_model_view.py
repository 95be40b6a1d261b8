"""viz.model_view: models over a real nccl-tests curve (chapter 05) and a fitted model's residuals (chapter 08).
What is drawn is held against closed forms computed here: busbw = S / t * 2(N-1)/N, ratio = model / measured,
residual = (alpha_k + S / B_k) / t - 1 with the regime's own numbers."""
import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from commlab import cost, hardware, nccl
from commlab.errors import CommlabError
from commlab.units import format_bandwidth, format_time
from commlab.nccl.examples import nccl_tests_log
from commlab.viz import png_bytes
from commlab.viz.model_view import plot_models_over_measured, plot_protocol_fit
from commlab.viz.style import MIN_FONT_PT

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def curve07():
    log = nccl.parse_log(nccl_tests_log(7).read_text())
    rows = [r for r in log.rows if r.size_bytes > 0]
    return (np.array([r.size_bytes for r in rows], dtype=float), np.array([r.oop.time_us for r in rows]) * 1e-6)


def not_blank(fig) -> bool:
    grey = np.asarray(Image.open(io.BytesIO(png_bytes(fig))).convert("L"), dtype=float)
    return grey.std() > 10


def legible(fig, drawn: list) -> None:
    """The house rule of every view: at most 10 in wide, every text drawn (``drawn_texts(fig)``) >= 10 pt and
    inside the figure."""
    renderer = fig.canvas.get_renderer()
    assert fig.get_figwidth() <= 10.0 and drawn
    assert min(t.get_fontsize() for t in drawn) >= MIN_FONT_PT
    for t in drawn:
        box = t.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= fig.bbox.x1 + 1 and box.y1 <= fig.bbox.y1 + 1, \
            t.get_text()


def test_models_over_measured_draws_busbw_and_ratio_as_the_closed_forms(curve07, drawn_texts):
    s, t = curve07
    ring = np.asarray(cost.collective_time_s("all_reduce", s, 8, "nvlink4"))
    fig = plot_models_over_measured(s, t, {"ring, wire alpha": ring}, op="all_reduce", n_ranks=8,
                                    roof=hardware.link("nvlink4"), measured_label="fixture 07")
    assert not_blank(fig)
    left, right = fig.axes
    measured, model = left.get_lines()[:2]
    factor = 2 * 7 / 8
    assert np.allclose(measured.get_ydata(), s / t / 1e9 * factor)
    assert np.allclose(model.get_ydata(), s / ring / 1e9 * factor)
    assert any(np.allclose(line.get_ydata(), 450.0) for line in left.get_lines())       # the roof, one way
    ratio = right.get_lines()[0]
    assert np.allclose(ratio.get_ydata(), ring / t)
    # at 1 MiB and 16 MiB the wire-alpha ring is about twice as fast as the measured run
    for size in (2**20, 2**24):
        assert ring[s == size][0] / t[s == size][0] < 0.62
    legible(fig, drawn_texts(fig))


def test_fit_residuals_are_the_regimes_own_lines(curve07, drawn_texts):
    s, t = curve07
    fit = cost.fit_protocol_model(s, t)
    fig = plot_protocol_fit(s, t, fit, title="fixture 07")
    assert not_blank(fig)
    left, right = fig.axes
    k = np.searchsorted(np.array(fit.boundaries_nbytes), s, side="right")
    by_hand = np.array([fit.regimes[i].alpha_s + fit.regimes[i].beta_s_per_byte * x for i, x in zip(k, s)])
    rows = [line for line in right.get_lines() if line.get_marker() == "o"]      # one per regime
    assert len(rows) == len(fit.regimes)
    residual = np.concatenate([line.get_ydata() for line in rows])
    drawn_s = np.concatenate([line.get_xdata() for line in rows])
    order = np.argsort(drawn_s, kind="stable")
    assert np.allclose(residual[order], (by_hand / t - 1) * 100)
    legend = " ".join(text.get_text() for text in left.get_legend().get_texts())
    for regime in fit.regimes:
        assert f"{regime.label}: alpha = {format_time(regime.alpha_s)}, B = {format_bandwidth(regime.bw_GBps * 1e9)}" \
            in legend
    errors = np.abs(by_hand / t - 1) * 100
    assert f"median {np.median(errors):.1f}%" in right.get_title(loc="left")
    assert len(left.lines) >= 2 * len(fit.regimes)
    legible(fig, drawn_texts(fig))


def test_bad_input_is_a_clear_error(curve07):
    s, t = curve07
    fit = cost.fit_protocol_model(s, t)
    with pytest.raises(CommlabError, match="one time per size"):
        plot_protocol_fit(s, t[:-1], fit)
    with pytest.raises(CommlabError, match="sizes must be > 0"):
        plot_protocol_fit(np.r_[0.0, s[1:]], t, fit)
    with pytest.raises(CommlabError, match="ProtocolFit"):
        plot_protocol_fit(s, t, cost.fit_alpha_beta(s, t))
    with pytest.raises(CommlabError, match="at least one model"):
        plot_models_over_measured(s, t, {}, op="all_reduce", n_ranks=8)
    with pytest.raises(CommlabError, match="model 'short'"):
        plot_models_over_measured(s, t, {"short": t[:3]}, op="all_reduce", n_ranks=8)
