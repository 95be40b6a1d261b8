"""viz.fabric: the leaf-spine picture draws one leaf per rail (or per node), every spine, and refuses sizes it
cannot draw legibly."""
import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from commlab.errors import CommlabError
from commlab.viz import png_bytes
from commlab.viz.fabric import plot_fabric

matplotlib.use("Agg")


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


def test_rail_optimised_picture_has_a_leaf_per_rail_and_the_caption():
    fig = plot_fabric(3, 4, spines=2, rail_optimised=True, caption="per node: 400 GB/s out")
    labels = texts(fig)
    assert sorted(t for t in labels if t.startswith("rail")) == [f"rail {i} leaf" for i in range(4)]
    assert sum(t.startswith("spine") for t in labels) == 2 and "per node: 400 GB/s out" in labels
    assert sum(t == "G0" for t in labels) == 3
    grey = np.asarray(Image.open(io.BytesIO(png_bytes(fig))).convert("L"), dtype=float)
    assert grey.std() > 10


def test_top_of_rack_picture_has_a_leaf_per_node():
    labels = texts(plot_fabric(3, 2, spines=1, rail_optimised=False))
    assert sorted(t for t in labels if t.startswith("leaf")) == [f"leaf (rack {i})" for i in range(3)]


@pytest.mark.parametrize("args", [(0, 4, 2), (4, 9, 2), (4, 4, 0), (2.5, 4, 2)])
def test_sizes_out_of_range_are_refused(args):
    with pytest.raises(CommlabError, match="plot_fabric"):
        plot_fabric(*args)
