"""The book as a reader meets it: JupyterLab in Chromium, Run > Run All Cells, no error output, and the
ring animation moving when Play is pressed.

Cells run through JupyterLab's own menu; the outputs are read from the notebook model the page holds
(``window.jupyterapp``, exposed by the server fixture), so an error output is told apart from a warning
on stderr. Autosave is off, and each test checks that no outputs were saved into the committed notebook.
Screenshots go to tests/browser/output/ (not committed); with COMMLAB_UPDATE_SCREENSHOTS=1 the ring
animation's, when its test passes, also replaces docs/screenshots/ring_animation.png, the README's picture
(so that a plain `make test` leaves the working tree as it was).
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from commlab.book import load

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
WELCOME = "chapters/00_welcome.ipynb"
RING_CHAPTER = "chapters/05_ring_allreduce.ipynb"
README_SHOT = REPO / "docs" / "screenshots" / "ring_animation.png"
RUN_TIMEOUT_MS = 300_000
#: A laptop's window: the ring widget (controls, rings, caption) must fit it below JupyterLab's bars.
WINDOW_HEIGHT_PX = 1000

FIND_PANEL = """(path) => Array.from(window.jupyterapp.shell.widgets('main'))
    .find(w => w.context && w.context.path === path && w.content && w.content.model)"""
KERNEL_IDLE = f"""(path) => {{ const p = ({FIND_PANEL})(path);
    return !!(p && p.sessionContext.session && p.sessionContext.session.kernel
              && p.sessionContext.kernelDisplayStatus === 'idle'); }}"""
PROMPTS = f"""(path) => Array.from(({FIND_PANEL})(path).node.querySelectorAll('.jp-CodeCell .jp-InputPrompt'))
    .map(e => e.textContent.trim())"""
OUTPUTS = f"""(path) => {{ const cells = ({FIND_PANEL})(path).content.model.cells; const found = [];
    for (let i = 0; i < cells.length; i++) {{ const cell = cells.get(i); if (cell.type !== 'code') continue;
      for (let j = 0; j < cell.outputs.length; j++) {{ const o = cell.outputs.get(j).toJSON();
        found.push({{cell: i, type: o.output_type, ename: o.ename || '', evalue: o.evalue || '',
                     count: cell.executionCount}}); }} }}
    return found; }}"""


class LabNotebook:
    """One notebook opened in JupyterLab in the test's browser page."""

    def __init__(self, page, lab_server, path: str) -> None:
        self.page, self.path = page, path
        page.goto(lab_server.url(path))
        page.wait_for_function("() => !!window.jupyterapp", timeout=120_000)
        page.wait_for_function(KERNEL_IDLE, arg=path, timeout=120_000)

    def run_all(self) -> None:
        """Run > Run All Cells, then wait until no cell is queued or running and the kernel is idle."""
        self.page.locator(".lm-MenuBar-item", has_text="Run").click()
        self.page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        self.page.wait_for_function(f"(path) => ({PROMPTS})(path).some(t => /\\[(\\*|\\d+)\\]/.test(t))",
                                    arg=self.path, timeout=60_000)
        done = f"(path) => ({KERNEL_IDLE})(path) && !({PROMPTS})(path).some(t => t.includes('*'))"
        for _ in range(2):  # idle twice, a moment apart: a queued cell may start between two checks
            self.page.wait_for_function(done, arg=self.path, timeout=RUN_TIMEOUT_MS)
            self.page.wait_for_timeout(750)

    def errors(self) -> list[str]:
        return [f"cell {o['cell']}: {o['ename']}: {o['evalue']}"
                for o in self.page.evaluate(OUTPUTS, self.path) if o["type"] == "error"]

    def unexecuted_prompts(self) -> list[str]:
        return [t for t in self.page.evaluate(PROMPTS, self.path) if not any(ch.isdigit() for ch in t)]

    def screenshot(self, path: Path) -> Path:
        self.page.screenshot(path=str(path), full_page=False)
        return path


def saved_outputs(path: Path) -> int:
    """Code cells of the notebook on disk that carry outputs or execution counts (a save by the browser)."""
    nb = nbformat.read(path, as_version=4)
    return sum(1 for c in nb.cells if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")))


def run_clean(page, lab_server, path: str, output_dir: Path) -> LabNotebook:
    """Open ``path``, run all its cells, and assert every cell ran without an error output."""
    notebook = LabNotebook(page, lab_server, path)
    notebook.run_all()
    notebook.screenshot(output_dir / (Path(path).stem + ".png"))
    assert notebook.errors() == [], f"{path} shows error outputs: {notebook.errors()}"
    assert notebook.unexecuted_prompts() == [], f"{path}: cells left unexecuted"
    assert saved_outputs(REPO / path) == 0, f"{path} was saved with outputs by the browser run"
    return notebook


def ring_widget(page):
    """The output holding a Play button, a slider and an image: the ring animation widget."""
    outputs = page.locator(".jp-OutputArea-output").filter(has=page.locator(".widget-play")) \
        .filter(has=page.locator(".widget-slider")).filter(has=page.locator(".widget-image"))
    assert outputs.count() >= 1, "no widget output with a Play button, a slider and an image"
    return outputs.first


def state_of(box) -> tuple[list[str], list[str]]:
    """The slider readouts and image sources inside ``box``."""
    readouts = [r.inner_text() for r in box.locator(".widget-slider .widget-readout").all()]
    sources = [img.get_attribute("src") or "" for img in box.locator(".widget-image").all()]
    return readouts, sources


def press_play_and_check_it_moves(page, box, shots: Path, name: str) -> Path:
    """Press Play; the step (a slider) and the picture (an image) must both change. Returns the
    screenshot of the widget after it moved."""
    height_px = box.bounding_box()["height"]  # the whole widget on screen, below JupyterLab's bars
    page.set_viewport_size({"width": 1280, "height": int(min(max(900, height_px + 400), 4000))})
    page.wait_for_timeout(500)
    box.scroll_into_view_if_needed()
    readouts, sources = state_of(box)
    box.screenshot(path=str(shots / f"{name}_before.png"))
    play = box.locator(".widget-play button:has(.fa-play)")
    (play if play.count() else box.locator(".widget-play button")).first.click()
    moved = "([box, readouts, sources]) => {" \
            " const r = Array.from(box.querySelectorAll('.widget-slider .widget-readout')).map(e => e.innerText);" \
            " const s = Array.from(box.querySelectorAll('.widget-image')).map(e => e.getAttribute('src') || '');" \
            " return r.some((v, i) => v !== readouts[i]) && s.some((v, i) => v !== sources[i]); }"
    page.wait_for_function(moved, arg=[box.element_handle(), readouts, sources], timeout=20_000)
    page.wait_for_timeout(500)
    after = shots / f"{name}_after.png"
    box.screenshot(path=str(after))
    assert (shots / f"{name}_before.png").read_bytes() != after.read_bytes(), "the widget looks the same"
    return after


# --- the harness checks itself on a scratch notebook --------------------------------------------------

SCRATCH_WIDGET = """import io
import ipywidgets as widgets
import numpy as np
from PIL import Image as PILImage

def frame(step):
    pixels = np.zeros((40, 40, 3), dtype=np.uint8)
    pixels[step * 6:step * 6 + 6, :, 1] = 255
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="png")
    return buffer.getvalue()

play = widgets.Play(value=0, min=0, max=5, interval=200)
slider = widgets.IntSlider(value=0, min=0, max=5)
widgets.jslink((play, "value"), (slider, "value"))
image = widgets.Image(value=frame(0), format="png", width=120)
slider.observe(lambda change: setattr(image, "value", frame(change["new"])), names="value")
widgets.VBox([widgets.HBox([play, slider]), image])"""


def test_harness_sees_error_outputs_and_a_playing_widget(page, lab_server, output_dir):
    """Without this, a broken error check or Play check would pass the real tests silently."""
    scratch = output_dir / "scratch_harness.ipynb"
    nb = new_notebook(cells=[new_markdown_cell("# Harness check"), new_code_cell("print('hello')"),
                             new_code_cell(SCRATCH_WIDGET), new_code_cell("1 / 0")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, scratch)
    notebook = LabNotebook(page, lab_server, scratch.relative_to(REPO).as_posix())
    notebook.run_all()
    errors = notebook.errors()
    assert len(errors) == 1 and errors[0].startswith("cell 3: ZeroDivisionError"), errors
    press_play_and_check_it_moves(page, ring_widget(page), output_dir, "scratch_widget")


PLAYER = """from IPython.display import HTML
from commlab.viz.animation import ScheduleAnimation
HTML(ScheduleAnimation("ring-all-reduce", 3).to_html(interval_ms=200))"""


def test_a_to_html_player_shows_its_frame_and_plays_in_jupyterlab(page, lab_server, output_dir):
    """The self-contained player of chapters 05 and 06 (``to_html``): JupyterLab runs an output's scripts
    before it puts the output on the page; the frame must still be drawn, not 0 x 0 under its buttons."""
    scratch = output_dir / "scratch_player.ipynb"
    nb = new_notebook(cells=[new_markdown_cell("# Player check"), new_code_cell(PLAYER)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, scratch)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)[-200:]))
    notebook = LabNotebook(page, lab_server, scratch.relative_to(REPO).as_posix())
    notebook.run_all()
    assert notebook.errors() == []
    frame = page.locator(".jp-OutputArea-output div.animation img").first
    frame.wait_for()
    page.wait_for_function("(img) => img.naturalWidth > 0 && img.getBoundingClientRect().height > 50",
                           arg=frame.element_handle(), timeout=20_000)
    before = frame.get_attribute("src")
    page.locator(".jp-OutputArea-output div.animation button:has(.fa-play)").last.click()
    page.wait_for_function("([img, src]) => img.getAttribute('src') !== src", arg=[frame.element_handle(), before],
                           timeout=20_000)
    page.locator(".jp-OutputArea-output div.animation").first.screenshot(path=str(output_dir / "lab_player.png"))
    assert errors == [], f"the player's script failed: {errors}"


def test_a_chapter_opened_and_saved_in_jupyterlab_is_byte_for_byte_as_committed(page, lab_server, output_dir):
    """JupyterLab writes its kernel's display name and language_info into a notebook it saves; the save hook
    that make lab starts it with (commlab.book.hygiene.pre_save) keeps the committed metadata, so opening a
    chapter does not dirty git."""
    committed = REPO / WELCOME
    copy = output_dir / "opened_welcome.ipynb"
    shutil.copyfile(committed, copy)
    LabNotebook(page, lab_server, copy.relative_to(REPO).as_posix())
    before = copy.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    deadline = time.monotonic() + 30
    while copy.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert copy.stat().st_mtime_ns != before, "JupyterLab did not save the notebook"
    assert copy.read_bytes() == committed.read_bytes(), "a save in JupyterLab changed the committed notebook"


# --- the book ------------------------------------------------------------------------------------------

@pytest.mark.skipif(not (REPO / WELCOME).exists(), reason=f"{WELCOME} is not written yet")
def test_welcome_chapter_runs_in_jupyterlab_without_errors(page, lab_server, output_dir):
    run_clean(page, lab_server, WELCOME, output_dir)


@pytest.mark.skipif(not (REPO / RING_CHAPTER).exists(), reason=f"{RING_CHAPTER} is not written yet")
def test_ring_animation_plays_in_jupyterlab(page, lab_server, output_dir):
    page.set_viewport_size({"width": 1280, "height": WINDOW_HEIGHT_PX})
    run_clean(page, lab_server, RING_CHAPTER, output_dir)
    box = ring_widget(page)
    box.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    top_px = page.locator(".jp-NotebookPanel-toolbar").first.bounding_box()
    height_px = box.bounding_box()["height"]
    room_px = WINDOW_HEIGHT_PX - (top_px["y"] + top_px["height"] if top_px else 0)
    assert height_px <= room_px, (f"the ring widget is {height_px:.0f} px tall: its controls, rings and caption do "
                                  f"not fit the {room_px:.0f} px a {WINDOW_HEIGHT_PX} px window leaves below "
                                  "JupyterLab's bars")
    after = press_play_and_check_it_moves(page, box, output_dir, "ring_animation")
    if os.environ.get("COMMLAB_UPDATE_SCREENSHOTS") == "1":
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(after, README_SHOT)


def first_lab() -> str | None:
    labs = [nb for part in load(REPO / "book.toml").parts for nb in part.labs if (REPO / nb).exists()]
    return labs[0] if labs else None


@pytest.mark.skipif(first_lab() is None, reason="no lab notebook is listed in book.toml yet")
def test_a_lab_runs_in_jupyterlab_without_errors(page, lab_server, output_dir):
    run_clean(page, lab_server, first_lab(), output_dir)
