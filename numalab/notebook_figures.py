"""Every figure the notebooks draw, as PNG files (``numalab reproduce`` writes them next to the
calibration tables, so a report can be assembled without opening Jupyter).

The notebooks are executed afresh with ``nbclient`` (installed with JupyterLab) in a temporary
copy, so the PNGs show what the installed numalab computes now, not what was committed."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

from .resources import shipped_dir
from .storage import atomic_write

__all__ = ["notebook_dir", "notebooks", "export_figures"]


def notebook_dir() -> Path:
    """``notebooks/`` of a source checkout, or the copy installed inside the package."""
    return shipped_dir("notebooks", "notebooks", "*.ipynb")


def notebooks() -> list[Path]:
    """The researcher's notebooks, in order."""
    return sorted(notebook_dir().glob("[0-9][0-9]-*.ipynb"))


def _pngs(nb) -> list[bytes]:
    out = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                out.append(base64.b64decode(data["image/png"]))
    return out


def _execute(nb, cwd, timeout):
    """Run ``nb`` in a fresh kernel over IPC sockets in a private temporary folder: nothing
    leaves the machine, and the kernel has no reason to warn that it "is running over TCP
    without encryption" (ipykernel prints that once per kernel started on TCP, which is what
    interleaved seven warnings with numalab reproduce's output)."""
    import os
    import tempfile

    from nbclient import NotebookClient
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="numalab-kernel-") as sockets:
        # the client makes (and so shuts down and closes) the kernel manager: configure it
        cfg = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel")}})
        NotebookClient(nb, timeout=timeout, kernel_name="python3", config=cfg,
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def export_figures(out, *, execute: bool = True, timeout: int = 600, progress: bool = False,
                   only=None) -> list[Path]:
    """Write every PNG figure of every notebook to ``out/<notebook>-fig<k>.png``.

    ``execute=False`` exports the figures stored in the committed notebooks instead of
    re-running them (fast, but they show the numbers of whoever last executed them);
    ``only`` restricts to notebooks whose name starts with one of the given prefixes."""
    import nbformat

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    items = notebooks()
    if only is not None:
        prefixes = (only,) if isinstance(only, str) else tuple(only)
        items = [p for p in items if p.name.startswith(prefixes)]
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="notebook figures", unit="notebook")
    for path in items:
        nb = nbformat.read(path, as_version=4)
        if execute:
            nb = _execute(copy.deepcopy(nb), path.parent, timeout)
        for k, png in enumerate(_pngs(nb), start=1):
            target = out / f"{path.stem}-fig{k}.png"
            written.append(atomic_write(target, lambda tmp, png=png: tmp.write_bytes(png)))
    return written
