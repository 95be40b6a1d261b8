"""Submissions for the grading tests and the benchmark: an honest student's code for every lab (the reference
solution's text, as a student who wrote it would hand it in: no import of the reference, the answer key
written out), and the deliberate mistakes of tests/dist/test_lab_learner_code.py."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from commlab.labs import registry

SOLUTIONS = Path(__file__).resolve().parents[2] / "src" / "commlab" / "labs" / "solutions"


def honest_source(lab: str) -> str:
    """The reference's text with every import of the grader's own modules (the checks' answer key) written out."""
    if lab == "build_your_own_ring":     # the reference takes its ring from commlab.p2p.ring: hand in that text
        return (SOLUTIONS.parent.parent / "p2p" / "ring.py").read_text()
    text = (SOLUTIONS / f"{lab}.py").read_text()
    if lab == "nccl_debug_multinode":
        from commlab.labs.checks.nccl_debug_multinode import ANSWER_KEY

        text = text.replace("from commlab.labs.checks.nccl_debug_multinode import ANSWER_KEY",
                            f"ANSWER_KEY = {ANSWER_KEY!r}")
    return text


def write_honest(folder: Path, labs=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for lab in labs or registry.names():
        (folder / f"{lab}.py").write_text(honest_source(lab))
    return folder


def wrong_functions() -> dict:
    """{lab: (the text of a wrong function, the task it breaks)} of tests/dist/test_lab_learner_code.py."""
    path = Path(__file__).with_name("test_lab_learner_code.py")
    spec = importlib.util.spec_from_file_location("lab_learner_code", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG
