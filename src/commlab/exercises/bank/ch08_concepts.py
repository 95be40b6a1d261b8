"""Chapter 8, understanding: which variable to set, algbw and busbw when N doubles, nccl-tests' columns."""
from __future__ import annotations

from commlab import collectives, hardware
from commlab.exercises.bank.common import num, pick, rate
from commlab.exercises.bank.concepts import scenario_short, wrong_sentence
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

#: goals and the variable that serves each (NCCL's environment-variable documentation; torch's for TORCH_*)
GOALS = [
    {"text": "You want NCCL to print what it detected and chose: its version, the transports, the rings and trees, "
             "the channels.", "accepted": ("NCCL_DEBUG", "NCCL_DEBUG=INFO"),
     "why": "NCCL_DEBUG=INFO prints the init lines chapter 8 reads (NCCL_DEBUG_SUBSYS narrows them down).",
     "wrong": {"NCCL_DEBUG_SUBSYS": "NCCL_DEBUG_SUBSYS only chooses which subsystems print once NCCL_DEBUG is set.",
               "TORCH_DISTRIBUTED_DEBUG": "that is torch's own check of the calls (DETAIL), not NCCL's log.",
               "NCCL_ALGO": "NCCL_ALGO forces an algorithm; it prints nothing."}},
    {"text": "An A/B test: you want to force the ring algorithm to compare its busbw with what NCCL picks by itself.",
     "accepted": ("NCCL_ALGO", "NCCL_ALGO=Ring"),
     "why": "NCCL_ALGO=Ring restricts the algorithms NCCL may choose (and NCCL_PROTO the protocols).",
     "wrong": {"NCCL_PROTO": "NCCL_PROTO restricts the protocols (LL, LL128, Simple), not the algorithm.",
               "NCCL_DEBUG": "NCCL_DEBUG makes NCCL log; it changes no choice.",
               "NCCL_MIN_NCHANNELS": "channels are how many rings or trees run at once, not which algorithm."}},
    {"text": "A multi-node job picks the wrong network interface for its bootstrap and socket traffic (a docker "
             "bridge instead of the cluster network).", "accepted": ("NCCL_SOCKET_IFNAME",),
     "why": "NCCL_SOCKET_IFNAME names the interfaces NCCL may use for its sockets (GLOO_SOCKET_IFNAME for gloo).",
     "wrong": {"NCCL_IB_HCA": "NCCL_IB_HCA picks the InfiniBand adapters for RDMA, not the socket interface.",
               "MASTER_ADDR": "MASTER_ADDR is torch's rendezvous address; NCCL's own sockets follow "
                              "NCCL_SOCKET_IFNAME.",
               "NCCL_NET": "NCCL_NET chooses the network plugin (IB, Socket), not the interface."}},
]


def _which_variable(rng) -> Worked:
    return scenario_short(rng, GOALS, "Which environment variable do you set?")


def _algbw_doubles(rng) -> Worked:
    op = pick(rng, ("all_reduce", "all_gather", "reduce_scatter"))
    n = int(pick(rng, (4, 8, 16)))
    link = hardware.link(pick(rng, ("ib-ndr", "nvlink4")))
    busbw = link.unidir_GBps
    f1, f2 = collectives.busbw_factor(op, n), collectives.busbw_factor(op, 2 * n)
    alg1, alg2 = busbw / f1, busbw / f2
    stem = (f"On {n} ranks, nccl-tests' {op} at a large size reports busbw {num(busbw)} GB/s, the link's "
            f"{rate(link.unidir_Bps)} one way (an ideal ring), and algbw {num(alg1, 4)} GB/s. The same ring on "
            f"{2 * n} ranks, each on the same kind of link: what do the two columns show?")

    def text(a: float, b: float) -> str:
        return f"algbw {num(a, 4)} GB/s, busbw {num(b, 4)} GB/s"

    right = Choice(text(alg2, busbw), f"busbw = algbw x F(N) stays at the link for an ideal ring; F grows from "
                   f"{num(f1, 4)} to {num(f2, 4)}, so algbw = busbw / F shrinks.")
    wrong = [Choice(text(alg1, busbw * f2 / f1), "for an ideal ring busbw is the link's bandwidth at any N; what "
                    "changes is algbw = busbw / F(N), because each rank moves a larger share of the buffer."),
             Choice(text(alg1 / 2, busbw / 2), "each rank still sends about the same bytes over its own link; nothing "
                    "halves when N doubles."),
             Choice(text(2 * alg1, 2 * busbw), "more ranks do not add bandwidth to a ring: each rank's link stays the "
                    "bottleneck.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"op": op, "n": n})


def _columns(rng) -> Worked:
    n = int(pick(rng, (8, 16)))
    factor = collectives.busbw_factor("all_reduce", n)
    claims = [
        ("algbw is the buffer's size divided by the time of one call.", "nccl-tests' PERFORMANCE.md: algbw = S / t.",
         "algbw counts the bytes each rank sends divided by the time.",
         "that is busbw's idea; algbw is simply S / t."),
        (f"For all_reduce on {n} ranks, busbw = algbw x 2(N-1)/N = algbw x {num(factor)}.",
         "the bytes a ring all-reduce sends per rank, over the buffer.", None, None),
        ("A busbw above the link's one-way bandwidth can be real: NVLS and SHARP add in the switch.",
         "the factor assumes the ranks add; when a switch adds, each GPU sends less and busbw passes the link.",
         "A busbw above the link's one-way bandwidth always means a broken measurement.",
         "with NVLS or SHARP the switch does the adding, so busbw can exceed the link (chapter 8, log 07)."),
        ("The in-place and out-of-place columns run the same collective with the output buffer equal to, or apart "
         "from, the input.", "nccl-tests runs both and reports each.",
         "The in-place columns are measured with NCCL_ALGO forced to Ring.",
         "in-place means the output buffer is the input buffer; no algorithm is forced."),
    ]
    return wrong_sentence(rng, "nccl-tests' columns.", claims, params={"n": n})


EXERCISES = (
    Exercise("ch08.which-variable", "Which variable to set", "", 0,
             "Chapter 8's table: who reads each variable, NCCL or torch, and what it changes.", _which_variable,
             kind="short"),
    Exercise("ch08.algbw-doubles", "algbw and busbw when N doubles", "", 0,
             "busbw = algbw x F(N); which one does an ideal ring hold at the link? (chapter 8)", _algbw_doubles,
             kind="choice"),
    Exercise("ch08.wrong-sentence", "nccl-tests' columns: the wrong sentence", "", 0,
             "algbw, busbw, the factor, and what in-place means (chapter 8).", _columns, kind="choice"),
)
