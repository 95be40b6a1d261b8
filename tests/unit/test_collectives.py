"""collectives: references against hand-written numpy, sizes and bus factors against nccl-tests' rules."""
import numpy as np
import pytest

from commlab import collectives
from commlab.errors import CommlabError

# nccl-tests src/*.cu GetBw: the factor applied to algbw
NCCL_TESTS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1, "reduce": lambda n: 1,
    "all_gather": lambda n: (n - 1) / n, "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n, "gather": lambda n: (n - 1) / n, "scatter": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1,
}


@pytest.mark.parametrize("op", collectives.OPS)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 16])
def test_busbw_factor_matches_nccl_tests(op, n):
    assert collectives.busbw_factor(op, n) == pytest.approx(NCCL_TESTS_FACTOR[op](n))


def _inputs(n, length, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=length) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("length", [0, 1, 7, 16])
def test_references_by_hand(n, length):
    x = _inputs(n, length)
    total = sum(x) if n else None
    out = collectives.spec("all_reduce").reference(x)
    assert all(np.allclose(o, total) for o in out)
    rs = collectives.spec("reduce_scatter").reference(x)
    sizes = [length // n + (1 if r < length % n else 0) for r in range(n)]
    starts = np.cumsum([0] + sizes)
    for r in range(n):
        assert np.allclose(rs[r], total[starts[r]:starts[r + 1]])
    ag = collectives.spec("all_gather").reference(x)
    assert all(np.allclose(o, np.concatenate(x)) for o in ag)
    a2a = collectives.spec("all_to_all").reference(x)
    for j in range(n):
        expected = np.concatenate([x[i][starts[j]:starts[j + 1]] for i in range(n)])
        assert np.allclose(a2a[j], expected)
    sr = collectives.spec("sendrecv").reference(x)
    assert all(np.allclose(sr[r], x[(r - 1) % n]) for r in range(n))


@pytest.mark.parametrize("root", [0, 2])
def test_rooted_references(root):
    x = _inputs(4, 8, seed=1)
    assert all(np.allclose(o, x[root]) for o in collectives.spec("broadcast").reference(x, root=root))
    assert np.allclose(collectives.spec("reduce").reference(x, root=root)[root], sum(x))
    assert np.allclose(collectives.spec("gather").reference(x, root=root)[root], np.concatenate(x))
    sc = collectives.spec("scatter").reference(x, root=root)
    assert all(np.allclose(sc[r], x[root][2 * r:2 * r + 2]) for r in range(4))


def test_reductions_other_than_sum():
    x = _inputs(3, 5, seed=2)
    assert np.allclose(collectives.spec("all_reduce").reference(x, redop="max")[0], np.max(x, axis=0))
    with pytest.raises(CommlabError, match="reduction"):
        collectives.spec("all_reduce").reference(x, redop="xor")


def test_size_column_rules():
    # fixture 13 (all_gather, 16 ranks): size 1024 B, count 16 floats
    assert collectives.spec("all_gather").size_nbytes(16, 4, 16) == 1024
    # fixture 18 (alltoall, 2 ranks): size 32, count 4
    assert collectives.spec("alltoall").size_nbytes(4, 4, 2) == 32
    assert collectives.spec("all_reduce").size_nbytes(16, 4, 16) == 64
    assert collectives.spec("reduce_scatter").input_count(16, 16) == 256
    assert collectives.spec("all_gather").output_count(16, 16) == 256


@pytest.mark.parametrize("n", [2, 4, 8])
def test_bytes_per_rank_closed_forms(n):
    s = 1e6
    assert np.allclose(collectives.spec("all_reduce").bytes_sent_per_rank(s, n), 2 * (n - 1) / n * s)
    assert np.allclose(collectives.spec("all_gather").bytes_received_per_rank(s, n), (n - 1) / n * s)
    bc = collectives.spec("broadcast").bytes_sent_per_rank(s, n, root=1)
    assert bc.sum() == (n - 1) * s and bc[1] == s
    assert collectives.spec("broadcast").bytes_received_per_rank(s, n, root=1).sum() == (n - 1) * s
    red = collectives.spec("reduce")
    assert red.bytes_sent_per_rank(s, n, root=0)[0] == 0
    assert red.bytes_sent_per_rank(s, n).sum() == red.bytes_received_per_rank(s, n).sum()
    for op in collectives.OPS:
        sp = collectives.spec(op)
        assert sp.bytes_sent_per_rank(s, n).sum() == pytest.approx(sp.bytes_received_per_rank(s, n).sum())


def test_bad_names_and_roots():
    with pytest.raises(CommlabError, match="all_reduce"):
        collectives.spec("allreduse")
    with pytest.raises(CommlabError, match="root"):
        collectives.spec("broadcast").reference(_inputs(2, 3), root=5)
    assert collectives.canonical("all_reduce_perf") == "all_reduce"
