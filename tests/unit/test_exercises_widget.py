"""The notebook widget, driven from Python: type an answer, click Check, read the feedback."""
from __future__ import annotations

import pytest

from commlab import exercises as ex
from commlab.exercises.answers import format_answer

pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")
    monkeypatch.delenv("COMMLAB_LEARNER")


def test_widget_shows_this_learners_question():
    w = ex.widget("ch05.ring-volume", learner="ada")
    assert "ch05.ring-volume" in w.question.value
    params = ex.worked("ch05.ring-volume", "ada").params
    assert f"{params['n_ranks']} GPUs" in w.question.value
    assert w.question.value != ex.widget("ch05.ring-volume", learner="bob").question.value
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_check_button_gives_feedback_and_counts(tmp_path):
    w = ex.widget("ch05.ring-volume", learner="ada")
    expected = ex.worked("ch05.ring-volume", "ada").expected
    w.answer.value = "not a number"
    w.check_button.click()
    assert "Cannot read" in w.feedback.value
    assert w.solution_button.disabled
    for _ in range(3):
        w.answer.value = format_answer(expected * 3.3, "GB")
        w.check_button.click()
        assert "Not yet" in w.feedback.value
    assert not w.solution_button.disabled  # three readable attempts
    w.solution_button.click()
    assert "Worked solution" in w.solution.value
    w.answer.value = format_answer(expected, "GB")
    w.check_button.click()
    assert "Correct" in w.feedback.value
    assert ex.progress.entry("ch05.ring-volume", "ada").solved


def test_matrix_questions_keep_their_layout():
    w = ex.widget("ch10.topo-bandwidth", learner="ada")
    assert "<pre>" in w.question.value and "GPU0" in w.question.value


def test_show_displays_the_box(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    assert ex.show("ch01.mesh-links", learner="ada") is None
    assert len(shown) == 1 and hasattr(shown[0], "children")


def test_unknown_exercise_is_a_commlab_error():
    from commlab.errors import CommlabError

    with pytest.raises(CommlabError, match="ch05.ring-volume"):
        ex.widget("ch05.ring-volum")
