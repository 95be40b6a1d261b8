"""measure.tcp: the loopback TCP ping-pong runs between two processes and returns a positive one-way time
(its size is this machine's business: never asserted)."""
import pytest

from commlab.errors import CommlabError
from commlab.measure.tcp import tcp_loopback_latency


def test_loopback_round_trips_give_a_positive_one_way_time():
    result = tcp_loopback_latency(nbytes=300, n_round_trips=20, repeats=2)     # 300 > 256: a partial pattern
    assert result.nbytes == 300 and result.n_round_trips == 20 and result.one_way_s > 0


@pytest.mark.parametrize("kwargs", [dict(nbytes=0), dict(n_round_trips=-1), dict(repeats=1.5)])
def test_bad_arguments_name_the_value(kwargs):
    with pytest.raises(CommlabError, match=next(iter(kwargs))):
        tcp_loopback_latency(**kwargs)
