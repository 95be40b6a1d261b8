"""The exercises that test understanding (kind ``choice`` and ``short``), over many learners: the right answer is
accepted as a letter and as the choice's own text, every wrong choice and every known wrong short answer gets
its own sentence (the misconception it names) and the hint, nothing is revealed before it is allowed, the
choices move between learners, and the engine, the key, the widget and ``exercises list --json`` know the kind."""
from __future__ import annotations

import json

import pytest

from commlab import exercises as ex
from commlab.cli import main
from commlab.errors import CommlabError
from commlab.exercises.model import LETTERS, Choice, Exercise, Worked, choice_worked, normalise, short_worked

SEEDS = [f"learner-{i}" for i in range(40)]
CONCEPT_IDS = tuple(i for i in ex.ids() if ex.get(i).kind != "numeric")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")
    monkeypatch.delenv("COMMLAB_LEARNER")


def test_every_chapter_1_to_9_has_three_concept_exercises():
    for chapter in ("01", "02", "03", "04", "05", "06", "07", "08", "09"):
        kinds = [ex.get(i).kind for i in ex.ids(chapter)]
        assert sum(k != "numeric" for k in kinds) >= 3, (chapter, kinds)


@pytest.mark.parametrize("exercise_id", CONCEPT_IDS)
def test_the_right_answer_is_accepted_and_every_wrong_choice_named(exercise_id):
    exercise = ex.get(exercise_id)
    for seed in SEEDS:
        worked = ex.worked(exercise_id, seed)
        assert worked.kind == exercise.kind
        right = ex.check(exercise_id, worked.expected, learner=seed, record=False)
        assert right.correct and right.expected == worked.expected, (seed, right.message)
        if exercise.kind == "choice":
            assert len(worked.choices) >= 3 and len({c.text for c in worked.choices}) == len(worked.choices)
            assert ex.check(exercise_id, worked.expected.lower() + ")", learner=seed, record=False).correct
            assert ex.check(exercise_id, worked.right_choice.text, learner=seed, record=False).correct
            for letter, choice in zip(LETTERS, worked.choices):
                if choice.correct:
                    continue
                feedback = ex.check(exercise_id, letter, learner=seed, record=False)
                assert feedback.readable and not feedback.correct
                assert choice.feedback in feedback.message and exercise.hint in feedback.message
                assert feedback.mistake == f"choice {letter}" and feedback.expected is None
        else:
            for answer in worked.accepted:
                assert ex.check(exercise_id, f"  {answer.upper()} ", learner=seed, record=False).correct
            assert worked.known_wrong
            for wrong in worked.known_wrong:
                feedback = ex.check(exercise_id, wrong.text, learner=seed, record=False)
                assert not feedback.correct and wrong.feedback in feedback.message and feedback.expected is None
            other = ex.check(exercise_id, "gather_everything", learner=seed, record=False)
            assert other.readable and not other.correct and exercise.hint in other.message


@pytest.mark.parametrize("exercise_id", CONCEPT_IDS)
def test_learners_get_different_instances(exercise_id):
    seen = {(ex.worked(exercise_id, s).question, str(ex.worked(exercise_id, s).expected)) for s in SEEDS}
    assert len(seen) >= 2


@pytest.mark.parametrize("exercise_id", [i for i in CONCEPT_IDS if ex.get(i).kind == "choice"])
@pytest.mark.parametrize("answer", ["Z", "", "   ", None, True, 3.5, ["A"], "the first one", "x" * 600, 0, 9])
def test_an_unreadable_choice_says_what_is_accepted(exercise_id, answer):
    feedback = ex.check(exercise_id, answer, learner="ada", record=False)
    assert not feedback.readable and not feedback.correct and feedback.message.startswith("Cannot read")


def test_unreadable_answers_are_not_counted(tmp_path):
    path = tmp_path / "p.json"
    ex.check("ch03.deadlock", "Z", learner="ada", progress=path)
    assert not path.exists() or ex.progress.entry("ch03.deadlock", "ada", path).attempts == 0  # type: ignore[attr-defined]


def test_attempts_unlock_the_answer_like_numeric_ones(tmp_path):
    path = tmp_path / "p.json"
    worked = ex.worked("ch03.deadlock", "ada")
    wrong = next(L for L, c in zip(LETTERS, worked.choices) if not c.correct)
    for _ in range(ex.ATTEMPTS_FOR_SOLUTION - 1):
        assert ex.check("ch03.deadlock", wrong, learner="ada", progress=path).expected is None
    third = ex.check("ch03.deadlock", wrong, learner="ada", progress=path)
    assert third.expected == worked.expected and "solution('ch03.deadlock')" in third.message
    assert ex.solution("ch03.deadlock", learner="ada", progress=path).unlocked


def test_list_json_has_a_kind_for_every_exercise(capsys):
    assert main(["exercises", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list(ex.ids())
    assert all(r["kind"] in ("numeric", "choice", "short") for r in rows)
    assert {r["kind"] for r in rows} == {"numeric", "choice", "short"}


def test_the_key_gives_the_answer_and_every_choices_sentence(capsys):
    key = {e.id: e for e in ex.key("ada")}
    entry = key["ch04.which-collective"]
    assert entry.kind == "short" and entry.answer == ex.worked("ch04.which-collective", "ada").expected
    choice = key["ch06.which-curve"]
    worked = ex.worked("ch06.which-curve", "ada")
    assert choice.answer == worked.expected and choice.answer_text.startswith(f"{worked.expected}. ")
    assert [w for _, w in choice.feedback] == [c.feedback for c in worked.choices]
    assert main(["exercises", "key", "--seed", "ada", "--chapter", "06", "--solutions"]) == 0
    text = capsys.readouterr().out
    assert "ch06.which-curve: Which curve is the ring, the tree, NVLS [choice]" in text
    assert f"  A: {choice.answer_text}" in text
    assert main(["exercises", "key", "--seed", "ada", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["ch06.which-curve"]["kind"] == "choice" and rows["ch06.which-curve"]["answer"] == worked.expected


def test_the_cli_checks_a_choice_with_exit_codes(capsys):
    worked = ex.worked("ch05.n-doubles", "bob")
    wrong = next(L for L, c in zip(LETTERS, worked.choices) if not c.correct)
    assert main(["exercises", "check", "ch05.n-doubles", worked.expected, "--seed", "bob"]) == 0
    assert main(["exercises", "check", "ch05.n-doubles", wrong, "--seed", "bob"]) == 1
    assert main(["exercises", "check", "ch05.n-doubles", "Q", "--seed", "bob"]) == 2
    capsys.readouterr()


def test_the_widget_takes_a_letter():
    w = ex.ExerciseWidget("ch07.first-bucket", learner="ada", record=False)
    assert w.answer.placeholder == "a letter"
    w.answer.value = str(ex.worked("ch07.first-bucket", "ada").expected)
    w.check_button.click()
    assert "Correct" in w.feedback.value and "A." in w.question.value


def test_the_model_refuses_malformed_concept_exercises():
    rng = __import__("numpy").random.default_rng(0)
    with pytest.raises(CommlabError, match="one right choice"):
        Worked("q", None, "s", choices=(Choice("a", "x"), Choice("b", "y")))
    with pytest.raises(CommlabError, match="both accepted and known wrong"):
        short_worked("q", ("all_gather",), (Choice("All-Gather", "no"),), "s")
    with pytest.raises(CommlabError, match="no unit and no tolerance"):
        Exercise("ch01.bad-one", "t", "ms", 0, "h", lambda r: choice_worked(r, "q", Choice("a", "x"), [], "s"),
                 kind="choice")
    with pytest.raises(CommlabError, match="kind must be one of"):
        Exercise("ch01.bad-two", "t", "", 0, "h", lambda r: None, kind="essay")
    worked = choice_worked(rng, "stem", Choice("right", "why"), [Choice("w1", "f1"), Choice("w2", "f2")], "s",
                           shuffle=False, right_at=1)
    assert [c.text for c in worked.choices] == ["w1", "right", "w2"] and worked.expected == "B"


def test_normalise_reads_torch_and_nccl_spellings_alike():
    assert len({normalise(t) for t in ("all_gather", "All-Gather", "dist.all_gather()", "ncclAllGather",
                                       "torch.distributed.all_gather")}) == 1
