"""Run a notebook top to bottom for the static edition, as a reader would in JupyterLab.

The kernel is this Python (the project's environment), whatever other ``python3`` kernels the machine has
registered, and starts in the notebook's own folder. nbclient imports only when a build executes.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from commlab.errors import CommlabError


def _current_env_kernel_manager_class():
    """An AsyncKernelManager class whose ``python3`` kernel is ``sys.executable -m ipykernel_launcher``,
    its messages encrypted when pyzmq can (ipykernel warns about a plain TCP kernel otherwise).

    nbclient creates and shuts down the manager itself when given the class (not an instance).
    """
    import ipykernel.kernelspec
    import zmq
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    class CurrentEnvSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())

    class CurrentEnvKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            kwargs.setdefault("kernel_spec_manager", CurrentEnvSpecs())
            if "transport_encryption" in AsyncKernelManager.class_trait_names():  # jupyter_client >= 8.9
                kwargs.setdefault("transport_encryption", "auto" if zmq.has("curve") else "disabled")
            super().__init__(**kwargs)

    return CurrentEnvKernelManager


def _preview(error: Exception) -> str:
    """The first line of the cell that nbclient's timeout message quotes after its dashed rule."""
    lines = str(error).splitlines()
    rules = [i for i, line in enumerate(lines) if set(line.strip()) == {"-"}]
    return lines[rules[0] + 1].strip()[:80] if rules and rules[0] + 1 < len(lines) else "?"


def execute_notebook(nb, folder: Path, name: str, timeout_s: float, extra_env: dict[str, str] | None = None):
    """Execute ``nb`` (an nbformat NotebookNode, changed in place) with ``folder`` as the working directory.

    ``timeout_s`` bounds each cell (rounded up to whole seconds, as nbclient counts). A failing or slow
    cell raises CommlabError naming the notebook ``name`` and the error, so ``make book`` stops with one
    line that says where to look. ``extra_env`` is added to the kernel's environment. The widgets' state is
    kept in the notebook's metadata, so the page can show each widget as it appeared (commlab.book.widgets).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    client = NotebookClient(nb, kernel_manager_class=_current_env_kernel_manager_class(), timeout=math.ceil(timeout_s),
                            kernel_name="python3", allow_errors=False,
                            store_widget_state=True, resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env={**os.environ, **(extra_env or {})})
    except CellTimeoutError as exc:
        raise CommlabError(f"{name}: a cell ran longer than --timeout {timeout_s:g} s "
                           f"(the cell starting {_preview(exc)!r}); raise --timeout or fix the cell") from None
    except CellExecutionError as exc:
        raise CommlabError(f"{name}: a cell raised {exc.ename}: {exc.evalue}; open the notebook in "
                           f"JupyterLab and run it to see the traceback") from None
    except DeadKernelError as exc:
        raise CommlabError(f"{name}: the kernel died while running the notebook ({exc})") from None
    return nb
