"""The house rule of tests/unit/test_viz_legibility.py for the labs' model views (viz.fit_view, viz.nccl_picks):
no figure wider than 10 in, every text a reader reads at 10 pt or more and inside the figure, measured on the
rendered figure with real inputs (fixture 07; DGX H100 machines)."""
from __future__ import annotations


import matplotlib
import numpy as np
import pytest

from commlab import cost, nccl
from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import predict
from commlab.viz.fit_view import plot_fit_residuals
from commlab.viz.nccl_picks import plot_nccl_picks, plot_pair_times
from commlab.viz.style import MIN_FONT_PT

matplotlib.use("Agg")
SIZES = 2.0 ** np.arange(10, 35)


def _predict(desc: str):
    return predict("all_reduce", SIZES, parse_machine(desc))


def fit_view():
    rows = nccl.parse_log(nccl.nccl_tests_log(7).read_text()).rows
    s = np.array([r.size_bytes for r in rows], dtype=float)
    t = np.array([r.oop.time_us for r in rows]) * 1e-6
    fit = cost.fit_protocol_model(s, t)
    return plot_fit_residuals(s, t, {"alpha-beta line": cost.fit_alpha_beta(s, t).time_s,
                                     "protocol-aware fit (your protocol_time_s)": fit.time_s},
                              fit=fit, marks=[(2.0**21, "NCCL: Ring/LL -> NVLS/Simple")],
                              title="fixture 07 (8x H100 SXM): three models and their residuals")


def picks_view():
    many = _predict("gpu=h100,gpus_per_node=8,nodes=128,nics_per_node=8,nic_Gbps=400,net=ib,nvls=0")
    return plot_nccl_picks([("128 nodes, 1024 GPUs, NVLS off", many), ("1 node, 8 GPUs, NVLS on",
                                                                       _predict("gpu=h100,gpus_per_node=8"))],
                           marks=[(0, 2.0**22, "your plain crossover (link numbers)")])


def pairs_view():
    return plot_pair_times(_predict("gpu=h100,gpus_per_node=8,nodes=16,nics_per_node=8,nic_Gbps=400,net=ib"),
                           title="dgx-h100-ndr x 16 (128 GPUs, NVLS on): 2 switch(es)")


@pytest.mark.parametrize("view", [fit_view, picks_view, pairs_view], ids=lambda f: f.__name__)
def test_every_text_is_at_least_10_pt_and_inside_a_figure_at_most_10_in_wide(view, drawn_texts):
    fig = view()
    texts = drawn_texts(fig)
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    assert fig.get_figwidth() <= 10.0 and texts
    assert not {t.get_text(): t.get_fontsize() for t in texts if t.get_fontsize() < MIN_FONT_PT}
    extents = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    cut = [s for s, e in extents if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1]
    assert not cut, cut
