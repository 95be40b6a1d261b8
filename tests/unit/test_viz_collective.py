"""viz plot_collective: the before/after picture of one collective, read back from the drawn figure (cell
colours, strips, printed values, grey rows) and held against closed forms of each collective's data movement
written here, and against numpy sums of the inputs."""
import io

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_hex

from commlab.errors import CommlabError
from commlab.viz import plot_collective
from commlab.viz.collective import SUM_COLOR
from commlab.viz.style import rank_colors

matplotlib.use("Agg")


def panels(fig):
    """(before axes, after axes): the two axes, top one first."""
    axes = sorted(fig.axes, key=lambda ax: -ax.get_position().y0)
    assert len(axes) == 2
    return axes


def collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def cell_of(path) -> tuple[int, int]:
    """(rank, element) of a cell polygon (x is the element, y the rank, in data units)."""
    x, y = path.vertices[:4].mean(axis=0)
    return int(np.floor(y)), int(np.floor(x))


def drawn_sources(ax, n_ranks) -> dict[tuple[int, int], tuple[int, ...]]:
    """(rank, element) -> the source ranks the drawing shows: one rank's colour, or the strip of a dark cell."""
    colours = {to_hex(c).upper(): r for r, c in enumerate(rank_colors(n_ranks))}
    cells = collection(ax, "cells")
    strips = collection(ax, "sum-strips")
    in_strip: dict[tuple[int, int], list[int]] = {}
    for path, face in zip(strips.get_paths(), strips.get_facecolors()):
        in_strip.setdefault(cell_of(path), []).append(colours[to_hex(face).upper()])
    out = {}
    for path, face in zip(cells.get_paths(), cells.get_facecolors()):
        key, hex_face = cell_of(path), to_hex(face).upper()
        out[key] = tuple(in_strip[key]) if hex_face == SUM_COLOR.upper() else (colours[hex_face],)
    return out


def grey_cells(ax) -> set[tuple[int, int]]:
    return {cell_of(p) for p in collection(ax, "grey").get_paths()}


def value_texts(ax) -> list:
    """The printed values (the rank labels and row notes are annotations, placed in offset points)."""
    return [t for t in ax.texts if not isinstance(t, matplotlib.text.Annotation)]


def values_at(ax) -> dict[tuple[int, int], str]:
    return {cell_of_text(t): t.get_text() for t in value_texts(ax)}


def notes(ax) -> dict[int, str]:
    """rank -> the note drawn to the right of its row ("not read", "undefined")."""
    return {int(np.floor(t.xy[1])): t.get_text() for t in ax.texts
            if isinstance(t, matplotlib.text.Annotation) and not t.get_text().startswith("rank ")}


def test_all_to_all_4_ranks_length_8_rank_0_gets_two_elements_from_each_rank():
    inputs = [np.arange(8.0) + 10 * r for r in range(4)]
    fig = plot_collective("all_to_all", 4, inputs=inputs)
    _, after = panels(fig)
    sources = drawn_sources(after, 4)
    assert [sources[(0, j)] for j in range(8)] == [(0,), (0,), (1,), (1,), (2,), (2,), (3,), (3,)]
    # closed form: rank q's element j is element 2q + (j % 2) of rank j // 2 (chunks of 2, torch's order)
    shown = values_at(after)
    for q in range(4):
        for j in range(8):
            assert shown[(q, j)] == f"{int(inputs[j // 2][2 * q + j % 2])}"


def test_all_reduce_every_after_cell_holds_every_rank_and_prints_the_sum():
    inputs = [np.array([1.0, 2.0, 3.0, 4.0]) * (r + 1) for r in range(4)]
    _, after = panels(plot_collective("all_reduce", 4, inputs=inputs))
    sources = drawn_sources(after, 4)
    assert len(sources) == 16 and all(s == (0, 1, 2, 3) for s in sources.values())
    total = np.sum(inputs, axis=0)
    shown = values_at(after)
    assert all(shown[(q, j)] == f"{int(total[j])}" for q in range(4) for j in range(4))


def test_broadcast_from_root_2_every_after_cell_is_rank_2_and_other_inputs_are_not_read():
    before, after = panels(plot_collective("broadcast", 4, root=2))
    assert set(drawn_sources(after, 4).values()) == {(2,)}
    assert {rank for rank, _ in grey_cells(before)} == {0, 1, 3}
    assert notes(before) == {0: "not read", 1: "not read", 3: "not read"}
    assert not grey_cells(after)


@pytest.mark.parametrize("op", ["reduce", "gather"])
def test_reduce_and_gather_grey_the_non_root_outputs_as_undefined(op):
    n, root = 4, 1
    fig = plot_collective(op, n, root=root)
    before, after = panels(fig)
    assert {rank for rank, _ in grey_cells(after)} == {0, 2, 3}
    word = "no output" if op == "gather" else "undefined"   # torch's gather gives the others nothing
    assert notes(after) == {0: word, 2: word, 3: word}
    assert {rank for rank, _ in drawn_sources(after, n)} == {root}
    assert not grey_cells(before), "every input reaches the root"
    assert any(("no output" if op == "gather" else "undefined") in t.get_text() for t in fig.texts), \
        "the panel title says why"
    sources = drawn_sources(after, n)
    root_row = [sources[(root, j)] for j in range(len(sources))]
    if op == "reduce":
        assert all(s == tuple(range(n)) for s in root_row)
    else:                                               # the root concatenates the inputs in rank order
        length = len(root_row) // n
        assert root_row == [(j // length,) for j in range(len(root_row))]


def test_reduce_scatter_rank_q_prints_the_sum_of_chunk_q():
    inputs = [np.arange(1.0, 9.0) * (r + 1) for r in range(4)]
    _, after = panels(plot_collective("reduce_scatter", 4, inputs=inputs))
    total = np.sum(inputs, axis=0)
    shown = values_at(after)
    assert shown == {(q, j): f"{int(total[2 * q + j])}" for q in range(4) for j in range(2)}


def test_sendrecv_rank_q_holds_rank_q_minus_1():
    _, after = panels(plot_collective("sendrecv", 5))
    sources = drawn_sources(after, 5)
    assert all(s == ((q - 1) % 5,) for (q, _), s in sources.items())


def test_values_sit_inside_their_cells_and_too_narrow_cells_print_none():
    fig = plot_collective("all_gather", 4)
    fig.savefig(io.BytesIO(), format="png")
    renderer = fig.canvas.get_renderer()
    for ax in panels(fig):
        cells = {cell_of(p): p.get_extents(ax.transData) for p in collection(ax, "cells").get_paths()}
        for (rank, j), _ in values_at(ax).items():
            text = [t for t in value_texts(ax) if cell_of_text(t) == (rank, j)][0]
            box = text.get_window_extent(renderer)
            cell = cells[(rank, j)]
            assert cell.x0 <= box.x0 and box.x1 <= cell.x1 and cell.y0 <= box.y0 and box.y1 <= cell.y1
    narrow = plot_collective("all_gather", 4, inputs=[np.arange(16.0) * 1000 for _ in range(4)])
    assert all(not values_at(ax) for ax in panels(narrow))
    assert any("too narrow" in t.get_text() for t in narrow.texts)
    assert narrow.get_figwidth() <= 10.0


def cell_of_text(text) -> tuple[int, int]:
    x, y = text.get_position()
    return int(np.floor(y)), int(np.floor(x))


@pytest.mark.parametrize("kwargs, match", [
    ({"op": "allsum", "n_ranks": 4}, "unknown collective"),
    ({"op": "broadcast", "n_ranks": 4, "root": 7}, "root"),
    ({"op": "all_reduce", "n_ranks": 0}, "n_ranks"),
    ({"op": "all_reduce", "n_ranks": 17}, "n_ranks"),
    ({"op": "all_reduce", "n_ranks": 2, "inputs": [[1, 2], [3]]}, "one length"),
    ({"op": "all_reduce", "n_ranks": 3, "inputs": [[1, 2], [3, 4]]}, "3 one-dimensional"),
    ({"op": "all_reduce", "n_ranks": 2, "inputs": [[[1]], [[2]]]}, "one-dimensional"),
    ({"op": "all_reduce", "n_ranks": 2, "inputs": [[1, np.nan], [3, 4]]}, "finite"),
    ({"op": "all_gather", "n_ranks": 4, "inputs": [np.arange(20)] * 4}, "at most 64"),
])
def test_bad_arguments_are_commlab_errors(kwargs, match):
    with pytest.raises(CommlabError, match=match):
        plot_collective(**kwargs)
