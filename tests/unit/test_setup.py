"""The set-up: what pyproject.toml declares (core, [book], [test]), the torch range and CI's exact pin, the conda
file, the Makefile, the README's commands, the licence, the version, and a repository that stands alone.

Third-party imports are read from the source with :mod:`ast` and mapped to their distributions by
``importlib.metadata``, independently of how pyproject.toml was written.
"""
import ast
import importlib.metadata
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "commlab"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
JUPYTER = {"jupyterlab", "ipywidgets", "ipykernel", "ipython", "nbconvert", "nbclient", "nbformat", "notebook",
           "jupyter-client", "jupyter-server", "jupyter-server-mathjax", "pyzmq", "sphinx", "myst-nb",
           "sphinx-book-theme", "sphinx-copybutton", "sphinx-mathjax-offline", "jupyter-cache",
           "docutils"}
#: conda-forge's names for the PyPI distributions environment.yml takes from conda
CONDA_NAMES = {"pytorch": "torch", "matplotlib-base": "matplotlib"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(group: str | None = None) -> dict[str, Requirement]:
    listed = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    return {norm(req.name): req for req in map(Requirement, listed)}


def imported_distributions() -> dict[str, set[str]]:
    """Each third-party distribution that a module under src/commlab imports -> the modules importing it."""
    owners = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top in sys.stdlib_module_names or top == "commlab" or top == "tomli":
                    continue
                assert top in owners, f"{path.relative_to(ROOT)} imports {top!r}, which no installed package provides"
                for dist in owners[top]:
                    found.setdefault(norm(dist), set()).add(str(path.relative_to(SRC)))
    return found


def test_every_imported_distribution_is_declared():
    declared = set(requirements()) | set(requirements("book"))
    missing = {dist: sorted(where) for dist, where in imported_distributions().items() if dist not in declared}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_core_has_no_jupyter_and_the_book_extra_has_it():
    core, book = requirements(), requirements("book")
    assert set(core) >= {"numpy", "matplotlib", "torch", "cloudpickle", "nvidia-ml-py", "tqdm"}
    assert not set(core) & JUPYTER, f"Jupyter in the core: {set(core) & JUPYTER}"
    assert set(book) >= {"jupyterlab", "ipywidgets", "ipykernel", "ipython", "nbclient", "nbformat", "sphinx",
                         "myst-nb", "sphinx-book-theme", "sphinx-copybutton", "sphinx-mathjax-offline"}
    assert set(requirements("test")) >= {"pytest", "nbval", "playwright"}
    assert not any(re.match(r"pynvml\b", d) for d in PROJECT["dependencies"])  # nvidia-ml-py is the kept one


def test_torch_is_a_range_and_ci_pins_one_release_inside_it():
    torch = requirements()["torch"]
    assert torch.specifier.contains("2.6.0") and not torch.specifier.contains("2.5.1"), torch
    assert not any(spec.operator == "==" for spec in torch.specifier), "the exact pin belongs in constraints.txt"
    pins = [Requirement(line) for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    (pin,) = [req for req in pins if req.name == "torch"]
    (exact,) = [spec.version for spec in pin.specifier if spec.operator == "=="]
    assert exact == "2.13.0" and torch.specifier.contains(exact)
    installed = Version(importlib.metadata.version("torch")).base_version   # make: the pin; conda: its own
    assert torch.specifier.contains(installed), f"torch {installed} is outside pyproject's {torch.specifier}"


def test_every_pip_install_of_the_makefile_uses_the_constraints():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^PIP := .*pip install .*-c \$\(CONSTRAINTS\)", makefile, re.M)
    assert "CONSTRAINTS := constraints.txt" in makefile
    installs = [line for line in makefile.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all(line.startswith("PIP :=") for line in installs), installs
    assert re.search(r"\$\(PIP\) -e '\.\[book\]'", makefile) and re.search(r"\$\(PIP\) -e '\.\[book,test\]'", makefile)
    assert re.search(r"^lab: install-book$", makefile, re.M) and re.search(r"^test: install$", makefile, re.M)


def conda_packages(text: str) -> dict[str, str]:
    """The conda (not pip) dependencies of environment.yml: name -> version spec ("" when none)."""
    packages, in_pip = {}, False
    for line in text.split("\ndependencies:", 1)[1].splitlines():
        stripped = line.split("#", 1)[0].rstrip()
        if re.match(r"^\s*-\s*pip:\s*$", stripped):
            in_pip = True
        elif in_pip and re.match(r"^\s{0,4}-\s", stripped):
            in_pip = False
        match = re.match(r"^\s{2,4}-\s+([A-Za-z0-9_.-]+)\s*(.*)$", stripped)
        if match and not in_pip:
            packages[match.group(1).lower()] = match.group(2).strip()
    return packages


def test_environment_yml_takes_binaries_from_conda_in_pyprojects_ranges_and_the_project_from_pip():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*-e\s+\"?\.\[book,test\]\"?\s*$", text, re.M), \
        "environment.yml must pip install -e .[book,test]"
    declared = requirements() | requirements("book")
    conda = conda_packages(text)
    assert {"python", "pip", "pytorch", "numpy"} <= set(conda), conda
    for name, spec in conda.items():
        if name in ("python", "pip"):
            continue
        dist = CONDA_NAMES.get(name, name)
        assert dist in declared, f"environment.yml installs {name}, which pyproject.toml does not declare"
        if spec:
            ours = ",".join(sorted(str(s) for s in declared[dist].specifier))
            assert ",".join(sorted(spec.split(","))) == ours, \
                f"{name}: {spec!r} in environment.yml, {ours!r} in pyproject"


def test_python_version_agrees():
    minimum = PROJECT["requires-python"].removeprefix(">=")
    conda = re.search(r"python=(\d+\.\d+)", (ROOT / "environment.yml").read_text()).group(1)
    assert tuple(map(int, conda.split("."))) >= tuple(map(int, minimum.split(".")))


def readme_block(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_the_readmes_conda_test_command_runs_the_notebooks_as_make_test_does():
    command = readme_block("With conda").replace("\\\n", " ")
    nbval = next(line for line in command.splitlines() if "--nbval" in line)
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    env = re.search(r"^NOTEBOOK_ENV := (.*)$", makefile, re.M).group(1).replace("$(CURDIR)", "$PWD")
    recipe = re.search(r"^test-notebooks:.*\n(?:\t.*\n)*?\t\$\(NOTEBOOK_ENV\) \$\(PY\) -m (pytest .*)$", makefile, re.M)
    flags = [f for f in recipe.group(1).split() if f.startswith("--nbval") or f in ("chapters", "labs")]
    for word in env.split() + flags:
        assert word in nbval.split(), f"the README's conda command lacks {word!r}: {nbval}"
    assert "mkdir -p _build" in nbval  # where COMMLAB_PROGRESS points


def test_readme_says_what_linux_downloads_and_how_to_get_the_cpu_wheel():
    section = (ROOT / "README.md").read_text().split("## What the install downloads", 1)[1].split("\n## ", 1)[0]
    assert "CUDA build" in section and "several GB" in section
    assert "https://download.pytorch.org/whl/cpu" in section and "TORCH_INDEX" in (ROOT / "Makefile").read_text()


def test_ci_calls_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme


def test_licence_version_and_typing_marker_are_each_written_once():
    assert PROJECT["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (SRC / "py.typed").is_file() and "py.typed" in str(tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"])
    import commlab

    assert commlab.__version__ == PROJECT["version"] == importlib.metadata.version("commlab")
    written = [str(p.relative_to(ROOT)) for p in SRC.rglob("*.py")
               if re.search(r"^__version__\s*=", p.read_text(encoding="utf-8"), re.M)]
    assert written == [], f"a second version string: {written}"


def test_pre_commit_strips_notebooks_keeping_cell_ids():
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert "https://github.com/kynan/nbstripout" in config and "id: nbstripout" in config and "--keep-id" in config


def tracked_files() -> list[pathlib.Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def test_no_file_refers_to_a_path_outside_the_repository():
    outside = re.compile("|".join([r"\.\./" + "shared", "/work/" + "shared", "/work/" + "wt/", "/work/" + r"main\b"]))
    found = []
    for path in tracked_files():
        if path.suffix in (".png", ".gif", ".whl") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if outside.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
