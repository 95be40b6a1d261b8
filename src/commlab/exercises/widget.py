"""An exercise as a small notebook widget: question, answer box, Check, feedback, Show solution.

ipywidgets is imported when a widget is built, not when commlab is imported. The widget calls the same
:func:`~commlab.exercises.checking.check` as code does, so a learner's attempts count the same either way.
Tests drive it from Python: set ``w.answer.value``, call ``w.check_button.click()``, read ``w.feedback.value``.
"""
from __future__ import annotations

import html

from commlab.exercises import progress as store
from commlab.exercises.answers import describe_unit
from commlab.exercises.checking import PathArg, check, solution
from commlab.exercises.registry import get, worked
from commlab.exercises.seeding import current_learner


def _paragraphs(text: str) -> str:
    """Plain text with $...$ LaTeX as HTML paragraphs (HTMLMath typesets the LaTeX).

    A paragraph whose lines are all indented by four spaces (a printed matrix) keeps its layout in <pre>.
    """
    parts = []
    for part in text.split("\n\n"):
        lines = part.splitlines()
        if lines and all(line.startswith("    ") for line in lines):
            parts.append(f"<pre>{html.escape(chr(10).join(line[4:] for line in lines))}</pre>")
        else:
            parts.append(f"<p>{html.escape(part).replace(chr(10), '<br>')}</p>")
    return "".join(parts)


class ExerciseWidget:
    """The widgets of one exercise for one learner; displays as a VBox."""

    def __init__(self, exercise_id: str, learner: object = None, progress: PathArg = None,
                 record: bool = True) -> None:
        import ipywidgets as widgets

        self.exercise = get(exercise_id)
        self.learner = current_learner(learner)
        self.progress = progress
        self.record = record
        instance = worked(self.exercise.id, self.learner)
        unit = {"choice": "a letter", "short": "a word or two"}.get(self.exercise.kind) or \
            describe_unit(self.exercise.unit)
        header = f"<b>{html.escape(self.exercise.id)}</b>: {html.escape(self.exercise.title)}"
        self.question = widgets.HTMLMath(value=header + _paragraphs(instance.question))
        self.answer = widgets.Text(placeholder=f"{unit}", description="Answer:", continuous_update=False)
        self.check_button = widgets.Button(description="Check", button_style="primary")
        self.solution_button = widgets.Button(description="Show solution", disabled=True)
        self.feedback = widgets.HTML(value="")
        self.solution = widgets.HTMLMath(value="")
        self.check_button.on_click(self._on_check)
        self.solution_button.on_click(self._on_solution)
        self._refresh_solution_button()
        buttons = widgets.HBox([self.answer, self.check_button, self.solution_button])
        self.box = widgets.VBox([self.question, buttons, self.feedback, self.solution])

    def _refresh_solution_button(self) -> None:
        if self.record:
            entry = store.entry(self.exercise.id, self.learner, self.progress)
            self.solution_button.disabled = not entry.solution_unlocked

    def _on_check(self, _button=None) -> None:
        feedback = check(self.exercise.id, self.answer.value, learner=self.learner, progress=self.progress,
                         record=self.record)
        self.feedback.value = feedback._repr_html_()
        self._refresh_solution_button()

    def _on_solution(self, _button=None) -> None:
        shown = solution(self.exercise.id, learner=self.learner, progress=self.progress)
        self.solution.value = _paragraphs(shown.text)

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def widget(exercise_id: str, learner: object = None, progress: PathArg = None) -> ExerciseWidget:
    """The exercise as a widget (a notebook displays it when it is a cell's last value)."""
    return ExerciseWidget(exercise_id, learner, progress)


def show(exercise_id: str, learner: object = None, progress: PathArg = None) -> None:
    """Display the exercise's widget in the notebook."""
    from IPython.display import display

    display(widget(exercise_id, learner, progress).box)
