"""collectives.contributions: which source ranks reach each output element, against closed forms of each
collective's data movement (written here from torch's documented semantics) and against an independent probe
that perturbs one input element at a time and watches which outputs move."""
import numpy as np
import pytest

from commlab import collectives
from commlab.errors import CommlabError


def one_hot(n: int, s: int) -> list[bool]:
    return [r == s for r in range(n)]


def piece_sizes(length: int, n: int) -> list[int]:
    """np.array_split's piece sizes, written out: the first length % n pieces get one extra element."""
    return [length // n + (1 if i < length % n else 0) for i in range(n)]


def test_all_to_all_4_ranks_length_8_rank_0_gets_two_elements_from_each_rank_in_order():
    reach = collectives.contributions("all_to_all", 4, 8)
    assert reach.shape == (4, 8, 4)
    sources = [int(np.flatnonzero(cell)[0]) for cell in reach[0]]
    assert sources == [0, 0, 1, 1, 2, 2, 3, 3]
    assert reach[0].sum(axis=1).tolist() == [1] * 8          # each element from exactly one rank


@pytest.mark.parametrize("n, length", [(2, 2), (3, 7), (4, 8), (5, 3)])
def test_all_to_all_rank_q_gets_piece_q_of_every_rank_in_rank_order(n, length):
    reach = collectives.contributions("all_to_all", n, length)
    for q in range(n):
        size = piece_sizes(length, n)[q]                      # piece q has the same size on every rank
        want = [one_hot(n, j // size) for j in range(size * n)] if size else []
        assert reach[q, :size * n].tolist() == want
        assert not reach[q, size * n:].any()


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_all_reduce_every_output_holds_every_rank(n):
    assert collectives.contributions("all_reduce", n, 5).all()


@pytest.mark.parametrize("root", [0, 2, 3])
def test_broadcast_every_output_holds_only_the_root(root):
    reach = collectives.contributions("broadcast", 4, 6, root=root)
    assert reach.shape == (4, 6, 4)
    assert (reach == np.array(one_hot(4, root))).all()


@pytest.mark.parametrize("root", [0, 1])
def test_reduce_root_holds_every_rank(root):
    reach = collectives.contributions("reduce", 3, 4, root=root)
    assert reach[root].all()


@pytest.mark.parametrize("op", ["all_gather", "gather"])
def test_gathers_concatenate_in_rank_order_on_the_root(op):
    n, length, root = 4, 3, 2
    reach = collectives.contributions(op, n, length, root=root)
    assert reach.shape == (n, n * length, n)
    assert reach[root].tolist() == [one_hot(n, j // length) for j in range(n * length)]


def test_gather_non_root_rows_are_padded_to_the_root_length():
    reach = collectives.contributions("gather", 3, 2, root=0)
    assert not reach[1, 2:].any() and not reach[2, 2:].any()


def test_reduce_scatter_rank_q_holds_the_sum_of_piece_q():
    n, length = 3, 7
    reach = collectives.contributions("reduce_scatter", n, length)
    assert reach.shape == (n, max(piece_sizes(length, n)), n)
    for q, size in enumerate(piece_sizes(length, n)):
        assert reach[q, :size].all() and not reach[q, size:].any()


def test_scatter_every_output_comes_from_the_root():
    reach = collectives.contributions("scatter", 4, 8, root=1)
    assert (reach == np.array(one_hot(4, 1))).all()


def test_sendrecv_rank_q_receives_from_q_minus_1():
    n = 5
    reach = collectives.contributions("sendrecv", n, 3)
    for q in range(n):
        assert (reach[q] == np.array(one_hot(n, (q - 1) % n))).all()


def probe(op: str, n: int, length: int, root: int) -> list[np.ndarray]:
    """Independent of contributions: perturb each input element of rank s, mark the outputs that move."""
    ref = collectives.spec(op).reference
    rng = np.random.default_rng(7)
    inputs = [rng.normal(size=length) for _ in range(n)]
    base = ref(inputs, root=root)
    moved = [np.zeros((len(out), n), dtype=bool) for out in base]
    for s in range(n):
        for j in range(length):
            nudged = [x.copy() for x in inputs]
            nudged[s][j] += 1.0
            for q, out in enumerate(ref(nudged, root=root)):
                moved[q][:, s] |= out != base[q]
    return moved


@pytest.mark.parametrize("op", collectives.OPS)
@pytest.mark.parametrize("n, length, root", [(1, 3, 0), (2, 4, 1), (3, 5, 2), (4, 8, 0)])
def test_every_collective_agrees_with_the_perturbation_probe(op, n, length, root):
    reach = collectives.contributions(op, n, length, root=root)
    for q, moved in enumerate(probe(op, n, length, root)):
        assert reach[q, :len(moved)].tolist() == moved.tolist(), (op, q)
        assert not reach[q, len(moved):].any()


@pytest.mark.parametrize("kwargs, match", [
    ({"op": "all_reduce", "n_ranks": 4, "length": 0}, "length"),
    ({"op": "all_reduce", "n_ranks": 4, "length": 2.5}, "length"),
    ({"op": "all_reduce", "n_ranks": 0, "length": 4}, "n_ranks"),
    ({"op": "broadcast", "n_ranks": 4, "length": 4, "root": 4}, "root"),
    ({"op": "allsum", "n_ranks": 4, "length": 4}, "unknown collective"),
])
def test_bad_arguments_are_commlab_errors(kwargs, match):
    with pytest.raises(CommlabError, match=match):
        collectives.contributions(**kwargs)
