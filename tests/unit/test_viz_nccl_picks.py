"""The band of NCCL's picks: every size is drawn in the colour of the pair predict picked there (read back
from the drawn bars), the pairs NCCL never picked are not in the key, and bad input is refused in a sentence."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_hex

from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import predict
from commlab.errors import CommlabError
from commlab.viz import png_bytes
from commlab.viz.nccl_picks import PAIR_COLORS, plot_nccl_picks

SIZES = 2.0 ** np.arange(10, 35)


def _prediction(desc: str):
    return predict("all_reduce", SIZES, parse_machine(desc))


def test_each_size_is_drawn_in_the_colour_of_the_pair_picked_there():
    one = _prediction("gpu=h100,gpus_per_node=8,nvls=0")
    many = _prediction("gpu=h100,gpus_per_node=8,nodes=16,nics_per_node=8,nic_Gbps=400,net=ib")
    fig = plot_nccl_picks([("one node", one), ("16 nodes", many)], marks=[(1, 2.0**20, "a mark")])
    ax = fig.axes[0]
    for y, prediction in ((0, one), (-1, many)):
        bars = [b for b in ax.patches if abs(b.get_y() + b.get_height() / 2 - y) < 1e-9]
        for nbytes, pair in zip(prediction.nbytes, prediction.pairs()):
            holder = [b for b in bars if b.get_x() <= nbytes <= b.get_x() + b.get_width()]
            assert len(holder) == 1 and to_hex(holder[0].get_facecolor()) == PAIR_COLORS[pair].lower(), nbytes
    key = {t.get_text() for t in fig.legends[0].get_texts()}
    assert key == set(one.pairs()) | set(many.pairs()) | {"a mark"}
    assert png_bytes(fig).startswith(b"\x89PNG") and fig.get_figwidth() <= 10


def test_bad_input_is_refused():
    with pytest.raises(CommlabError, match="at least one"):
        plot_nccl_picks([])
    with pytest.raises(CommlabError, match="band index must be 0..0, got 3"):
        plot_nccl_picks([("x", _prediction("gpu=h100,gpus_per_node=8"))], marks=[(3, 1024.0, "m")])


def test_pair_times_are_each_pair_over_the_fastest_and_the_pick_is_drawn():
    from commlab.viz.nccl_picks import plot_pair_times

    p = _prediction("gpu=h100,gpus_per_node=8,nodes=16,nics_per_node=8,nic_Gbps=400,net=ib")
    fig = plot_pair_times(p, title="16 nodes")
    drawn = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    best = np.min(list(p.table.values()), axis=0)
    for (algo, proto), t in p.table.items():
        np.testing.assert_allclose(drawn[f"{algo}/{proto}"], t / best, rtol=1e-12)
        assert np.all(drawn[f"{algo}/{proto}"] >= 1 - 1e-12)
    np.testing.assert_allclose(drawn["NCCL's pick"], p.time_s * 1e6 / best, rtol=1e-9)
    with pytest.raises(CommlabError, match="at least 2 sizes"):
        plot_pair_times(predict("all_reduce", [1024.0], parse_machine("gpu=h100,gpus_per_node=8")))

