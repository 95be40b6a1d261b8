"""How long a small message takes through this machine's kernel TCP stack (chapter 02, "TCP vs RDMA").

Two processes on this machine bounce a few bytes over a TCP connection on the loopback interface (127.0.0.1),
``n_round_trips`` back-to-back round trips per repeat, the way a ping-pong benchmark times them (osu_latency,
nccl-tests: one timer around many round trips, divided). Half a round trip is one message: a system call
and the kernel's TCP/IP send path on one side, its receive path and a wake-up on the other, with no NIC, wire
or switch. It is the share of a TCP message's latency that RDMA's kernel bypass removes, measured here; a
network adds its NICs, wire and switches on top. ``TCP_NODELAY`` is set so that Nagle's algorithm does not
hold small messages back. Pure standard library: no torch.

>>> result = tcp_loopback_latency(n_round_trips=50, repeats=2)
>>> result.one_way_s > 0 and result.nbytes == 8
True
"""
from __future__ import annotations

import multiprocessing
import socket
import time
from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class TcpLatency:
    """The fastest repeat's one-way time (half a round trip) of an ``nbytes`` message over loopback TCP."""

    nbytes: int
    one_way_s: float
    n_round_trips: int
    repeats: int


def _echo(port: int, nbytes: int) -> None:
    """The peer: connect, then send back every message until the other side closes."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            data = _recv_exactly(conn, nbytes)
            if data is None:
                return
            conn.sendall(data)


def _recv_exactly(conn: socket.socket, nbytes: int) -> bytes | None:
    chunks, got = [], 0
    while got < nbytes:
        chunk = conn.recv(nbytes - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _time_round_trips_s(conn: socket.socket, message: bytes, n_round_trips: int) -> float:
    start = time.perf_counter()
    for _ in range(n_round_trips):
        conn.sendall(message)
        if _recv_exactly(conn, len(message)) is None:
            raise CommlabError("the TCP echo process closed the connection during the measurement")
    return time.perf_counter() - start


def tcp_loopback_latency(nbytes: int = 8, n_round_trips: int = 2000, repeats: int = 5,
                         timeout_s: float = 30.0) -> TcpLatency:
    """One-way time of an ``nbytes`` message between two processes over loopback TCP (fastest of ``repeats``
    loops of ``n_round_trips`` round trips, each loop divided by 2 x n_round_trips)."""
    for name, value in (("nbytes", nbytes), ("n_round_trips", n_round_trips), ("repeats", repeats)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CommlabError(f"tcp_loopback_latency: {name} must be a whole number >= 1, got {value!r}")
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(timeout_s)
        peer = multiprocessing.get_context("spawn").Process(target=_echo, args=(server.getsockname()[1], nbytes),
                                                            daemon=True)
        peer.start()
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(timeout_s)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                message = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
                _time_round_trips_s(conn, message, min(200, n_round_trips))     # warm up
                best_s = min(_time_round_trips_s(conn, message, n_round_trips) for _ in range(repeats))
        finally:
            peer.join(timeout=timeout_s)
            if peer.is_alive():
                peer.kill()
    return TcpLatency(nbytes, best_s / (2 * n_round_trips), n_round_trips, repeats)
