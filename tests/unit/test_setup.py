"""The set-up: pyproject is the one list of dependencies; environment.yml installs it through pip."""
import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_environment_yml_installs_the_project_through_pip():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*-e\s+\"?\.\[test\]\"?\s*$", text, re.M), "environment.yml must pip install -e .[test]"
    # no dependency of pyproject is listed a second time in environment.yml
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=;\[ ]", d, maxsplit=1)[0].lower() for d in deps}
    listed = {line.strip(" -").split("=")[0].lower() for line in text.splitlines() if line.strip().startswith("- ")}
    assert not (names & listed), f"listed twice: {names & listed}"


def test_python_version_agrees():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    minimum = project["requires-python"].removeprefix(">=")
    conda = re.search(r"python=(\d+\.\d+)", (ROOT / "environment.yml").read_text()).group(1)
    assert tuple(map(int, conda.split("."))) >= tuple(map(int, minimum.split(".")))


def test_torch_is_pinned_and_nvml_is_the_maintained_package():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "torch==2.13.0" in deps
    assert any(d.startswith("nvidia-ml-py") for d in deps)
    assert not any(re.match(r"pynvml\b", d) for d in deps)


def test_ci_calls_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
