"""`commlab animate`: HTML, GIF or PNGs per step; bad N, algorithm or extension is one line and exit 2."""
import io

import matplotlib
import pytest
from PIL import Image

from commlab.cli import main

matplotlib.use("Agg")


def test_writes_html(tmp_path, capsys):
    out = tmp_path / "ring.html"
    assert main(["animate", "ring-all-reduce", "--ranks", "3", "--out", str(out)]) == 0
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 2 * (3 - 1) + 1
    assert str(out) in capsys.readouterr().out


def test_writes_gif_and_pngs(tmp_path):
    gif = tmp_path / "tree.gif"
    assert main(["animate", "tree-all-reduce", "--ranks", "4", "--out", str(gif)]) == 0
    with Image.open(gif) as image:
        assert image.n_frames == 2 * 2 + 1
    frames = tmp_path / "frames"
    assert main(["animate", "naive-all-reduce", "--ranks", "3", "--out", f"{frames}/"]) == 0
    names = sorted(p.name for p in frames.iterdir())
    assert names == [f"step_{k:03d}.png" for k in range(2 * (3 - 1) + 1)]
    existing = tmp_path / "existing"
    existing.mkdir()
    assert main(["animate", "ring-all-gather", "--ranks", "2", "--out", str(existing)]) == 0
    assert len(list(existing.iterdir())) == 2
    Image.open(io.BytesIO((existing / "step_001.png").read_bytes())).verify()


@pytest.mark.parametrize("argv, words", [
    (["animate", "rung", "--out", "x.html"], "unknown algorithm 'rung'"),
    (["animate", "ring-all-reduce", "--ranks", "17", "--out", "x.html"], "from 2 to 16, got 17"),
    (["animate", "ring-all-reduce", "--ranks", "1", "--out", "x.html"], "got 1"),
    (["animate", "ring-all-reduce", "--ranks", "four", "--out", "x.html"], "'four'"),
    (["animate", "ring-all-reduce", "--out", "x.mp4"], "'x.mp4'"),
    (["animate", "ring-all-reduce"], "--out"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("commlab animate: error: ") and words in err
    assert list(tmp_path.iterdir()) == []
