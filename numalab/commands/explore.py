"""``numalab explore``: the explorers as a web page on 127.0.0.1, no JupyterLab needed.

Serves, with Voilà, a page holding the four explorers (PID hash, scan filter pass by pass,
futex buckets, PID-history length) or one of the shipped notebooks (``--notebook 03``), prints
its URL and runs until interrupted (Ctrl-C). The page shows once every explorer has its first
answer; each refines it in place. Voilà runs the notebook in a kernel of this Python
and shows only outputs and widgets; everything stays on this machine (its assets ship with the
voila package, nothing is fetched from the network).
"""

from __future__ import annotations

import argparse

HELP = "serve the interactive explorers as a web page on 127.0.0.1 (needs voila)"

#: the page: one explorer per cell, markdown between them
PAGE = [
    ("markdown", "# numalab explorers\n\nEvery control has a tooltip in the kernel's words. A knob change "
                 "shows a first answer quickly (fewer seeds) and then refines it; a newer change supersedes "
                 "the run in flight."),
    ("markdown", "## PID-history length: a workload under a profile with history N (`numalab.simulate`)"),
    ("code", "import numalab as nl\n"
             "# the page shows once every explorer has its first answer; each refines it in place after\n"
             "nl.widgets.Explorer.display_waits = \"first\"\n"
             "nl.widgets.HistoryExplorer({history_args})"),
    ("markdown", "## Futex hash buckets (`perf bench futex hash`)"),
    ("code", "nl.widgets.FutexExplorer({futex_args})"),
    ("markdown", "## The scan filter, pass by pass"),
    ("code", "nl.widgets.DecisionMatrixExplorer(profile=\"rfc2023-p6\", threads=4, passes=12, pattern=\"phase-change\")"),
    ("markdown", "## Access-PID hash collisions"),
    ("code", "nl.widgets.PidHashExplorer(threads=48)"),
]

QUICK_HISTORY = ('workload="numa01_THREAD_ALLOC", topology="2s-128", history=8, threads=16, seeds=4, '
                 'workload_options={"size_bytes": 1 << 30}')
FULL_HISTORY = ""  # the explorer's defaults: numa01_THREAD_ALLOC on 2s-128, full size, 8 seeds


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("explore", help=HELP, description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--port", type=int, default=8866, help="TCP port on 127.0.0.1 (default: %(default)s; 0 = any free)")
    p.add_argument("--notebook", default=None,
                   help="serve a shipped notebook instead of the explorers page: its number or name, e.g. 03")
    p.add_argument("--full-size", action="store_true",
                   help="open the history explorer at full size (8 seeds, the benchmark's own threads and buffers) "
                        "instead of 16 threads, 1 GiB, 4 seeds. The page shows once each explorer has a first "
                        "answer -- for the history explorer one full-size run per policy, side by side on the "
                        "cores: about 8 CPU-seconds, 5-10 s on an idle 2-CPU machine -- and refines it to 8 seeds "
                        "in place (about 20 CPU-seconds more)")
    p.add_argument("--dir", default=None, help="directory for the generated page (default: a temporary one)")
    p.set_defaults(command="explore")
    return p


def page_notebook(full_size: bool = False) -> dict:
    """The explorers page as an nbformat-4 dict."""
    history = FULL_HISTORY if full_size else QUICK_HISTORY
    cells = []
    for i, (kind, src) in enumerate(PAGE):
        src = src.format(history_args=history, futex_args="threads=128" if full_size else "threads=16")
        cell = {"cell_type": kind, "id": f"explore-{i}", "metadata": {}, "source": src}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        cells.append(cell)
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}


def _shipped(name: str):
    from ..errors import NumalabValueError
    from ..resources import shipped_dir

    try:
        root = shipped_dir("notebooks", "notebooks", "*.ipynb")
    except FileNotFoundError:
        names = []
    else:
        hits = sorted(p for p in root.glob("*.ipynb") if p.stem == name or p.stem.startswith(f"{name}-")
                      or p.stem.split("-", 1)[-1] == name)
        if hits:
            return hits[0]
        names = sorted(p.stem for p in root.glob("*.ipynb"))
    raise NumalabValueError(f"--notebook={name!r} is not a shipped notebook; allowed: {', '.join(names) or 'none found'}")


def command(path, port: int) -> list[str]:
    """The Voilà command line that serves ``path`` on 127.0.0.1:``port``."""
    import sys

    return [sys.executable, "-m", "voila", str(path), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
            "--show_tracebacks=True", "--VoilaConfiguration.file_allowlist=.*\\.(png|jpg|gif|svg)"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args) -> int:
    import importlib.util
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    from ..errors import NumalabValueError

    if importlib.util.find_spec("voila") is None:
        raise NumalabValueError("numalab explore needs Voilà, which is not installed; install it with "
                                "`pip install voila` (or `pip install numalab[explore]`)")
    port = _free_port() if args.port == 0 else args.port
    if args.notebook:
        path = _shipped(str(args.notebook))
    else:
        root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="numalab-explore-"))
        root.mkdir(parents=True, exist_ok=True)
        path = root / "numalab-explorers.ipynb"
        path.write_text(json.dumps(page_notebook(args.full_size), indent=1))
    print(f"numalab explore: serving {path.name} at http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
    proc = subprocess.Popen(command(path, port), cwd=path.parent)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
        raise
