"""The DDP overlap lab: the model-to-layers solution against the layer widths (an independent count), DDP's
bucket rule against torch's own function and DDP's rebuilt buckets (and the named mistakes), and the script's
worker on 2 real gloo ranks with DDP and torch.profiler."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch.nn as nn

from commlab import launch, overlap
from commlab.errors import CommlabError
from commlab.labs.checks import ddp_overlap as checks
from commlab.labs.code import Code
from commlab.labs.solutions.ddp_overlap import ddp_buckets, layers_from_model

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "labs" / "scripts" / "ddp_overlap.py"


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def load_script():
    spec = importlib.util.spec_from_file_location("ddp_overlap_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_layers_follow_the_linear_widths_in_forward_order():
    script = load_script()
    layers = layers_from_model(script.make_model(), 0.02)
    pairs = list(zip(script.WIDTHS[:-1], script.WIDTHS[1:]))
    assert [layer.nbytes for layer in layers] == [4 * (i * o + o) for i, o in pairs]
    counts = np.array([i * o + o for i, o in pairs], dtype=float)
    np.testing.assert_allclose([layer.backward_s for layer in layers], 0.02 * counts / counts.sum(), rtol=1e-12)
    assert math.isclose(sum(layer.backward_s for layer in layers), 0.02)
    assert [layer.name for layer in layers][:2] == ["0 Linear", "2 Linear"]


def test_layers_of_a_nested_model_with_half_precision_and_no_bias():
    model = nn.Sequential(nn.Embedding(100, 16), nn.Sequential(nn.Linear(16, 8, bias=False), nn.LayerNorm(8)),
                          nn.Linear(8, 4).half())
    layers = layers_from_model(model, 1.0)
    assert [layer.nbytes for layer in layers] == [100 * 16 * 4, 16 * 8 * 4, 2 * 8 * 4, (8 * 4 + 4) * 2]
    assert [layer.name for layer in layers] == ["0 Embedding", "1.0 Linear", "1.1 LayerNorm", "2 Linear"]
    with pytest.raises(CommlabError, match="has no parameters"):
        layers_from_model(nn.ReLU(), 1.0)


def test_buckets_are_torchs_own_and_the_named_mistakes_are_caught(no_child_left):
    assert checks.check_ddp_buckets(ddp_buckets).problem == ""          # torch's function on 4 models, then DDP on 2 ranks
    first, cap = checks.limits_nbytes(None)
    assert (first, cap) == (2**20, 25 * 2**20)
    nbytes = checks.param_nbytes(checks.exact_mib_model())
    assert ddp_buckets(nbytes, 1) == [[4, 3, 2], [1], [0]]      # 1 MiB weights close a bucket at the cap exactly
    mistakes = {
        "fill in registration order": lambda nb, c=None, o=None: checks._rule(nb, *checks.limits_nbytes(c), order=range(len(nb))),
        "strict": lambda nb, c=None, o=None: checks._rule(nb, *checks.limits_nbytes(c), strict=True, order=o),
        "no small first bucket": lambda nb, c=None, o=None: checks._rule(nb, checks.limits_nbytes(c)[1],
                                                                         checks.limits_nbytes(c)[1], order=o),
        "decimal MB": lambda nb, c=None, o=None: checks._rule(nb, 2**20 if c is None else c * 1e6,
                                                              (25 if c is None else c) * 1e6, order=o),
        "ignores ready_order": lambda nb, c=None, o=None: ddp_buckets(nb, c),
    }
    words = {"fill in registration order": "the last parameter first", "strict": "(>=)",
             "no small first bucket": "_DEFAULT_FIRST_BUCKET_BYTES", "decimal MB": "2**20 bytes, not 10**6",
             "ignores ready_order": "use ready_order"}
    for name, fn in mistakes.items():
        problem = checks.check_ddp_buckets(fn, live=False).problem
        assert words[name] in problem, (name, problem)


def test_script_worker_runs_ddp_and_the_profiler_on_two_gloo_ranks(no_child_left):
    script = load_script()
    code = Code("ddp_overlap", None, "test")
    out, other = launch.run(script.worker, 2, code, [0.5, 8.0], 2, 1.0, backend="gloo", timeout_s=150, verbose=False)
    assert other is None
    assert out["backend"] == "gloo" and out["compute_s"] > 0
    assert sorted(out["measured_s"]) == [0.5, 8.0] and all(t > 0 for t in out["measured_s"].values())
    assert [s for s, _ in out["link"]] == list(script.LINK_SIZES) and all(t > 0 for _, t in out["link"])
    timeline = script.profile_timeline(out["events"])
    assert len(timeline.comm) >= 2                      # 6.5 MiB of gradients in 1 MiB buckets: several
    assert timeline.compute[0].start_s == 0.0 and timeline.step_s > 0
    assert out["bucket_problems"] == []                  # the reference's buckets are the ones DDP rebuilt
    text = script.report(out, code)
    assert "best cap: simulated" in text and "profiled step at bucket_cap_mb=1" in text
    assert "ddp_buckets: the same buckets as DDP rebuilt at every cap" in text


def test_script_refuses_bad_caps_in_one_line(capsys):
    script = load_script()
    assert script.main(["--caps", "1,zero"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ddp_overlap.py: error: --caps must be numbers of MiB") and err.count("\n") == 1
    assert script.main(["--caps", "0,4"]) == 2
    assert "from above 0 to 1024" in capsys.readouterr().err
    assert script.main(["--profile-cap", "-1"]) == 2
    assert "--profile-cap" in capsys.readouterr().err
