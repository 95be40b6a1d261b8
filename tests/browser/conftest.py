"""JupyterLab from the project's environment, driven by Debian's Chromium through Playwright.

The server runs ``sys.executable -m jupyter lab`` on 127.0.0.1, a free port and a random token, with its
config, data, runtime and IPython folders in a temporary folder, so a reader's own Jupyter set-up cannot
change what the tests see; its python3 kernel is this environment's. It is always stopped, and its port
checked free, whatever the outcome. Chromium is /usr/bin/chromium (``bash scripts/install_browser.sh``);
Playwright's own browser download is never used. Without Chromium the tests skip and say why.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from commlab.labs import ENV_VAR as LAB_SOLUTIONS_ENV

REPO = Path(__file__).resolve().parents[2]
OUTPUT = Path(__file__).resolve().parent / "output"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
START_TIMEOUT_S = 90
#: No news or update pop-ups over the notebook, and no autosave: a run must never write outputs into
#: a committed notebook.
LAB_SETTINGS = {"@jupyterlab/apputils-extension/notification.jupyterlab-settings":
                {"fetchNews": "false", "checkForUpdates": False},
                "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False}}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port``: a new server could bind it (closed connections may linger in
    TIME_WAIT for a minute; SO_REUSEADDR, which servers set, lets a bind through them)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def isolated_env(home: Path) -> dict[str, str]:
    """This process's environment with every Jupyter and IPython folder moved under ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "MPLBACKEND")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(home / name.lower())
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env[LAB_SOLUTIONS_ENV] = "1"  # labs run with their reference solutions, as under nbval in CI
    for name, settings in LAB_SETTINGS.items():
        plugin_dir, file_name = name.rsplit("/", 1)
        target = Path(env["JUPYTER_CONFIG_DIR"]) / "lab" / "user-settings" / plugin_dir / file_name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings))
    return env


def check_python3_kernel(env: dict[str, str]) -> None:
    """The python3 kernelspec the server will use is this environment's (under sys.prefix)."""
    listed = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"], env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    specs = json.loads(listed.stdout)["kernelspecs"]
    assert "python3" in specs, f"no python3 kernel in the isolated Jupyter path: {sorted(specs)}"
    resource_dir = Path(specs["python3"]["resource_dir"]).resolve()
    assert resource_dir.is_relative_to(Path(sys.prefix).resolve()), (
        f"python3 kernel resolves to {resource_dir}, outside this environment {sys.prefix}")
    argv0 = specs["python3"]["spec"]["argv"][0]
    assert argv0 in ("python", "python3") or Path(argv0).resolve() == Path(sys.executable).resolve(), argv0


def wait_until_ready(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer {url} within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen, port: int) -> None:
    """Terminate, wait, kill; then make sure nothing of the server's session is left on the port."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # kernels the server started, in its own session
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + 10
    while not port_is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert port_is_free(port), f"port {port} is still taken after stopping jupyter lab"


class LabServer:
    """A running JupyterLab: its base URL and token."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url, self.token = base_url, token

    def url(self, path: str) -> str:
        """``path`` opened alone in a new, empty workspace (no tabs restored from an earlier test)."""
        return f"{self.base_url}/lab/workspaces/w{secrets.token_hex(6)}/tree/{path}?token={self.token}"


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is not installed; run 'bash scripts/install_browser.sh' (as root) to enable these tests"
        print(f"\nbrowser tests skipped: {reason}")
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture(scope="session")
def lab_server(chromium, tmp_path_factory) -> LabServer:
    home = tmp_path_factory.mktemp("jupyter_home")
    env = isolated_env(home)
    check_python3_kernel(env)
    port, token = free_port(), secrets.token_hex(24)
    log = home / "jupyter_lab.log"
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={REPO}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: read kernel status and outputs
           "--ContentsManager.pre_save_hook=commlab.book.hygiene.pre_save",  # as make lab starts it
           f"--FileCheckpoints.checkpoint_dir={home / 'checkpoints'}"]  # no .ipynb_checkpoints in the repo
    cmd += ["--allow-root"] if os.geteuid() == 0 else []  # CI and containers run as root
    with open(log, "w") as log_file:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until_ready(proc, f"http://127.0.0.1:{port}/api/status?token={token}", log)
        yield LabServer(f"http://127.0.0.1:{port}", token)
    finally:
        stop_server(proc, port)


@pytest.fixture(scope="session")
def browser_context(chromium, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium_profile")), executable_path=str(chromium),
            args=CHROMIUM_ARGS, headless=True, viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        page.close()


@pytest.fixture(scope="session")
def output_dir() -> Path:
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT
