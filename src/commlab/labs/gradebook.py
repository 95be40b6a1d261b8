"""What grading a class writes: the terminal table, JUnit XML, the CSV gradebook and a feedback file per student.

Every text that came from a student (a message quoting their exception, their name, their value) passes
through :func:`printable` before a terminal sees it (control characters shown as ``\\x1b``, ``\\r``, so
``\\r\\x1b[2K`` cannot redraw a line) and through :func:`xml_text` before it goes into XML (characters XML 1.0
forbids are written out the same way, so the file stays well-formed whatever a message holds). A CSV cell
that a spreadsheet would take for a formula (``=``, ``+``, ``-``, ``@`` first) gets a leading ``'`` (OWASP's
advice on CSV injection).

JUnit: one ``<testsuite>`` per student, one ``<testcase classname="<student>.<lab>" name="<task>">`` per task
(GitLab and Jenkins key tests by classname and name, so every student's task is a test of its own); a failed
check is a ``<failure>``, a lab not handed in is ``<skipped>``, a fault of the grader is an ``<error>``.

>>> printable("FAIL\\r\\x1b[2Kpass")
'FAIL\\\\r\\\\x1b[2Kpass'
>>> xml_text("bad\\x00byte \\x1b[31m")
'bad\\\\x00byte \\\\x1b[31m'
"""
from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

_XML_BAD = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape_char(ch: str) -> str:
    code = ord(ch)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    """``text`` safe for a terminal line: every control, format (bidi) or unassigned character written out."""
    return "".join(_escape_char(ch) if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
                   else ch for ch in str(text))


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 forbids (and the other control characters) written out."""
    text = str(text)
    out = _XML_BAD.sub(lambda m: _escape_char(m.group()), text)
    return "".join(_escape_char(ch) if (unicodedata.category(ch) == "Cc" and ch not in "\n\t") or ch == "\r"
                   else ch for ch in out)


# --- the terminal table ---------------------------------------------------------------------------------------

VERDICTS = {"pass": "pass", "fail": "FAIL", "skipped": "skip", "error": "ERROR"}


def widths(results: Iterable, learners: Iterable[str | None], labs: Iterable[str]) -> tuple[int, int, int]:
    """Column widths that show every name whole: (student, lab, task)."""
    from commlab.labs import registry

    tasks = [t.name + " (drawn)" for lab in labs for t in registry.lab(lab).tasks] + [r.task for r in results]
    return (max([len(printable(n)) for n in learners if n] + [7]),
            max([len(n) for n in labs] + [3]),
            max([len(printable(t)) for t in tasks] + [4]))


def line(result, sizes: tuple[int, int, int], with_learner: bool) -> str:
    """One task's row: student, lab, task, pass/FAIL/skip/ERROR, the problem (escaped, on one line)."""
    who = f"{printable(result.learner):<{sizes[0]}} " if with_learner else ""
    verdict = VERDICTS.get(result.status, "FAIL" if not result.passed else "pass")
    return (f"{who}{printable(result.lab):<{sizes[1]}} {printable(result.task):<{sizes[2]}} {verdict:<5} "
            f"{printable(result.problem)}").rstrip()


# --- JUnit ------------------------------------------------------------------------------------------------------

def junit_xml(results, seed: int | None = None) -> str:
    """The results as JUnit XML (see the module's docstring); well-formed whatever the messages hold."""
    import xml.etree.ElementTree as ET

    results = list(results)

    def count(rows, status):
        return str(sum(r.status == status for r in rows))

    suites = ET.Element("testsuites", name="commlab labs", tests=str(len(results)), failures=count(results, "fail"),
                        errors=count(results, "error"), skipped=count(results, "skipped"),
                        time=f"{sum(r.seconds for r in results):.3f}")
    for learner in dict.fromkeys(r.learner for r in results):
        mine = [r for r in results if r.learner == learner]
        suite = ET.SubElement(suites, "testsuite", name=xml_text(learner or "labs"), tests=str(len(mine)),
                              failures=count(mine, "fail"), errors=count(mine, "error"),
                              skipped=count(mine, "skipped"), time=f"{sum(r.seconds for r in mine):.3f}")
        if seed is not None:
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="seed", value=str(seed))
        for r in mine:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"{learner or 'labs'}.{r.lab}"),
                                 name=xml_text(r.task), time=f"{r.seconds:.3f}")
            message = xml_text(r.problem)
            if r.status == "fail" or (not r.passed and r.status not in ("skipped", "error")):
                ET.SubElement(case, "failure", message=message, type="LabCheckFailed").text = message
            elif r.status == "skipped":
                ET.SubElement(case, "skipped", message=message)
            elif r.status == "error":
                ET.SubElement(case, "error", message=message, type="GraderError").text = message
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


# --- the gradebook ---------------------------------------------------------------------------------------------

def _cell(text: object) -> str:
    text = printable(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _points(x: float) -> str:
    return f"{x:g}"


def gradebook_csv(results, labs: list[str]) -> str:
    """A row per student, a column per lab (the points of its passed tasks), the total; a last column with the
    points possible."""
    results = list(results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *labs, "total", "possible"])
    for learner in dict.fromkeys(r.learner for r in results):
        mine = [r for r in results if r.learner == learner]
        per_lab = [sum(r.points for r in mine if r.lab == lab) for lab in labs]
        possible = sum(r.points_possible for r in mine)
        writer.writerow([_cell(learner or "mine"), *map(_points, per_lab), _points(sum(per_lab)), _points(possible)])
    return out.getvalue()


# --- feedback ---------------------------------------------------------------------------------------------------

def feedback_text(learner: str | None, results, logs: Path | None = None, seed: int | None = None) -> str:
    """What one student reads: each lab's tasks, what passed, what failed and why, in the checks' words."""
    rows = [r for r in results if r.learner == learner]
    earned, possible = sum(r.points for r in rows), sum(r.points_possible for r in rows)
    lines = [f"Feedback for {printable(learner or 'your labs')}: {_points(earned)} of {_points(possible)} points",
             ""]
    if seed is not None:
        lines += [f"(Some cases were drawn at random for this run, seed {seed}.)", ""]
    for lab in dict.fromkeys(r.lab for r in rows):
        mine = [r for r in rows if r.lab == lab]
        lines.append(f"## {lab}: {_points(sum(r.points for r in mine))} of "
                     f"{_points(sum(r.points_possible for r in mine))} points")
        for r in mine:
            verdict = {"pass": "passed", "skipped": "skipped", "error": "not graded (grader fault)"}.get(
                r.status, "FAILED")
            lines.append(f"- {printable(r.task)}: {verdict}" + (f": {printable(r.problem)}" if r.problem
                                                                 and r.status != "pass" else ""))
        if logs is not None and (logs / f"{lab}.log").is_file() and (logs / f"{lab}.log").stat().st_size:
            lines.append(f"  (what your code printed: {logs / f'{lab}.log'})")
        lines.append("")
    return "\n".join(lines)


def safe_file_name(name: str) -> str:
    """A student's name as one file name (no folders, no dot files)."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]", "_", printable(name)).lstrip(".")
    return cleaned[:200] or "_"
