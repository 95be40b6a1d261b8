"""Widgets in the static edition: each widget output drawn as it first appeared, with a note to use it live.

An executed notebook keeps its widgets' state (nbclient's ``store_widget_state``): every model with its
values, children, images and captured outputs. A page has no kernel, so a widget cannot run there, but what
it showed can be read: an exercise's question (its HTML), an answer box, a slider's value, an animation's
first frame, an explorer's figure. :func:`static_widget` draws that still picture with a note saying what
needs the notebook, whose link downloads the notebook itself; :mod:`commlab.book.sphinx_ext` puts it in
place of each widget output, so the page loads no widget manager from a CDN.

Only ipywidgets' own models are drawn (boxes, HTML, labels, text boxes, buttons, value controls, images,
outputs); anything else shows as its description, or not at all, under the same note.
"""
from __future__ import annotations

import html

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MODEL_REF = "IPY_MODEL_"
NOTE_CHECK = "Checking an answer needs the notebook"
NOTE_LIVE = "This widget is live in the notebook"
#: Shown when the widget's state was not kept (a notebook executed elsewhere, or without widget state).
NOTE_MISSING = "Interactive widget: run this notebook in JupyterLab to use it"
_BOXES = {"VBoxModel": "vbox", "BoxModel": "vbox", "GridBoxModel": "vbox", "AccordionModel": "vbox",
          "TabModel": "vbox", "StackModel": "vbox", "HBoxModel": "hbox"}
_INPUTS = {"TextModel", "TextareaModel", "FloatTextModel", "IntTextModel", "BoundedFloatTextModel",
           "BoundedIntTextModel", "PasswordModel", "ComboboxModel"}


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def _note(text: str, download: str | None) -> str:
    how = (f'<a href="{_escape(download)}" download>download this notebook</a> and run it in JupyterLab'
           if download else "run this notebook in JupyterLab")
    still = "" if text == NOTE_CHECK else " Here it is shown as it first appeared."
    return (f'<div class="commlab-widget-note" role="note"><strong>{_escape(text)}</strong>: {how} '
            f"(<code>make lab</code>).{still}</div>")


class Renderer:
    """Draws one notebook's widgets from its saved state."""

    def __init__(self, state: dict) -> None:
        self.state = state
        self.inputs = 0

    def model(self, ref: str) -> dict | None:
        model_id = ref[len(MODEL_REF):] if isinstance(ref, str) and ref.startswith(MODEL_REF) else ref
        entry = self.state.get(model_id)
        return entry if isinstance(entry, dict) else None

    def draw(self, ref: str, depth: int = 0) -> str:
        entry = self.model(ref)
        if entry is None or depth > 30:
            return ""
        name, values = entry.get("model_name", ""), entry.get("state", {})
        if name in _BOXES:
            children = "".join(self.draw(child, depth + 1) for child in values.get("children", []))
            return f'<div class="commlab-w-{_BOXES[name]}">{children}</div>'
        if name in ("HTMLModel", "HTMLMathModel"):
            return f'<div class="commlab-w-html">{self._label(values)}{values.get("value", "")}</div>'
        if name == "LabelModel":
            return f'<div class="commlab-w-label">{_escape(values.get("value", ""))}</div>'
        if name in _INPUTS:
            self.inputs += 1
            return (f'<label class="commlab-w-input">{self._label(values)}<input type="text" disabled '
                    f'value="{_escape(values.get("value", ""))}" '
                    f'placeholder="{_escape(values.get("placeholder", ""))}"></label>')
        if name in ("ButtonModel", "ToggleButtonModel"):
            return ('<button class="commlab-w-button" type="button" disabled>'
                    f'{_escape(values.get("description", ""))}</button>')
        if name == "ImageModel":
            return self._image(entry, values)
        if name == "OutputModel":
            return f'<div class="commlab-w-output">{"".join(map(_output_html, values.get("outputs", [])))}</div>'
        return self._control(values)

    @staticmethod
    def _label(values: dict) -> str:
        text = values.get("description", "")
        return f'<span class="commlab-w-description">{_escape(text)}</span> ' if text else ""

    def _control(self, values: dict) -> str:
        """A slider, dropdown, checkbox, play button...: its description and current value, as text."""
        if "_options_labels" in values and isinstance(values.get("index"), int):
            labels = values["_options_labels"]
            shown = labels[values["index"]] if 0 <= values["index"] < len(labels) else ""
        elif "value" in values and not isinstance(values["value"], (dict, list)):
            shown = values["value"]
        else:
            return ""
        return (f'<span class="commlab-w-control">{self._label(values)}'
                f"<strong>{_escape(shown)}</strong></span>")

    @staticmethod
    def _image(entry: dict, values: dict) -> str:
        for buffer in entry.get("buffers", []):
            if buffer.get("path") == ["value"] and buffer.get("encoding") == "base64":
                fmt = _escape(values.get("format", "png"))
                return (f'<img class="commlab-w-image" alt="widget image" '
                        f'src="data:image/{fmt};base64,{buffer.get("data", "")}">')
        return ""


def _output_html(output: dict) -> str:
    """One output captured by an Output widget, as HTML: an image, HTML, or text."""
    if not isinstance(output, dict):
        return ""
    if output.get("output_type") == "stream":
        return f"<pre>{_escape(output.get('text', ''))}</pre>"
    data = output.get("data", {})
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return f'<img alt="figure" src="data:{mime};base64,{"".join(data[mime]).strip()}">'
    if "image/svg+xml" in data:
        return "".join(data["image/svg+xml"])
    if "text/html" in data:
        return "".join(data["text/html"])
    if "text/plain" in data:
        return f"<pre>{_escape(''.join(data['text/plain']))}</pre>"
    if output.get("output_type") == "error":
        return f"<pre>{_escape(output.get('ename', ''))}: {_escape(output.get('evalue', ''))}</pre>"
    return ""


def static_widget(renderer: Renderer, model_id: str, download: str | None) -> tuple[str, str]:
    """(HTML, note) that stand for the widget ``model_id`` on a page: its still picture, then the note."""
    before = renderer.inputs
    picture = renderer.draw(model_id)
    note = NOTE_MISSING if not picture else NOTE_CHECK if renderer.inputs > before else NOTE_LIVE
    return f'<div class="commlab-widget">{picture}{_note(note, download)}</div>', note
