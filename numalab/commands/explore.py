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
import sys

from . import add_output

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
    add_output(p, "--dir", kind="dir", create=True, default=None,
               help="directory for the generated page (default: a temporary one, removed at exit)")
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
    """The Voila command line that serves ``path`` on 127.0.0.1:``port`` -- that port or none
    (``port_retries=0``: Voila would move on to the next free one while we print this one).
    ``iopub_timeout=30``: after a cell's reply, Voila's executor waits at most this many seconds
    for the cell's remaining messages and drops the outputs among those it has not read; the 4-s
    default dropped a displayed explorer from a page on a loaded CI machine (at 9c1a592)."""
    import sys

    return [sys.executable, "-m", "voila", str(path), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
            "--Voila.port_retries=0", "--show_tracebacks=True", "--VoilaExecutor.iopub_timeout=30",
            "--VoilaConfiguration.file_allowlist=.*\\.(png|jpg|gif|svg)"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_port(port: int) -> int:
    """``--port``: 0 (any free port) or a TCP port that nothing on 127.0.0.1 listens on yet."""
    import errno
    import socket

    from ..errors import NumalabValueError, check_int

    port = check_int("--port", port, lo=0, hi=65535)
    if port == 0:
        return _free_port()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no obstacle
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            why = "is in use by another program" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
            raise NumalabValueError(f"--port={port}: port {port} on 127.0.0.1 {why}; pick another --port, or "
                                    "--port 0 for any free one") from None
    return port


#: seconds Voila may take to start listening before numalab explore gives up
START_TIMEOUT_S = 180.0
#: seconds Voila has to stop (its kernels with it) after SIGTERM before it is killed
STOP_TIMEOUT_S = 10.0
_PREFIX = "numalab-explore-"


def _wait_listening(proc, port: int, timeout: float) -> None:
    """Return once the server accepts connections on ``port``; raise if it exits first or
    does not listen within ``timeout`` seconds."""
    import socket
    import time

    from ..errors import NumalabError

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise NumalabError(f"Voila stopped (exit status {proc.returncode}) before serving on port {port}; "
                               "its messages are above")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise NumalabError(f"Voila did not listen on port {port} within {timeout:.0f} s")


def _stop(proc) -> None:
    """Stop the server's process group: SIGTERM (Voila shuts its kernels down), SIGKILL after
    :data:`STOP_TIMEOUT_S`."""
    import os
    import signal
    import subprocess

    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def _remove_stale(root) -> None:
    """Remove the temporary folders of earlier runs whose process is gone (a SIGKILLed run
    cannot remove its own; its server's watchdog usually does)."""
    import shutil
    from pathlib import Path

    from ..signals import parent_alive

    for d in Path(root).glob(f"{_PREFIX}*"):
        try:
            pid = int(d.name[len(_PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if d.is_dir() and not parent_alive(pid, None):
            shutil.rmtree(d, ignore_errors=True)


def run(args) -> int:
    import importlib.util
    import json
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from ..errors import NumalabValueError
    from ..signals import process_start

    if importlib.util.find_spec("voila") is None:
        raise NumalabValueError("numalab explore needs Voilà, which is not installed; install it with "
                                "`pip install voila` (or `pip install numalab[explore]`)")
    port = _check_port(args.port)
    path = _shipped(str(args.notebook)) if args.notebook else None
    _remove_stale(tempfile.gettempdir())
    # everything the server writes (the page, Voila's connection files and temporary folders,
    # Jupyter's runtime files) goes under one folder of ours, removed when we stop
    tmp = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
    proc = None
    try:
        if path is None:
            root = Path(args.dir) if args.dir else tmp
            root.mkdir(parents=True, exist_ok=True)
            path = root / "numalab-explorers.ipynb"
            from ..storage import write_text

            write_text(path, json.dumps(page_notebook(args.full_size), indent=1))
        env = {**os.environ, "TMPDIR": str(tmp), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime")}
        me = os.getpid()
        start = process_start(me)
        guard = [sys.executable, "-m", "numalab.commands.explore", "--guard", str(me),
                 "" if start is None else str(start[1]), str(tmp), "--"]
        proc = subprocess.Popen(guard + command(path, port)[1:], cwd=path.parent, env=env, start_new_session=True)
        _wait_listening(proc, port, START_TIMEOUT_S)
        print(f"numalab explore: serving {path.name} at http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
        return proc.wait()
    finally:
        from .. import signals

        with signals.deferred():  # a second Ctrl-C must not leave the server running
            if proc is not None:
                _stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)


def _guarded(argv: list[str]) -> int:
    """The server process: ``--guard PARENT_PID PARENT_START TMP -- -m voila ...``. It never
    outlives the ``numalab explore`` that started it: SIGTERM when that process dies
    (PR_SET_PDEATHSIG), and a watchdog thread (for a parent killed while this process was
    being started) that removes the temporary folder and stops Voila the same way."""
    import os
    import runpy
    import shutil
    import signal
    import sys

    from ..signals import parent_alive, set_pdeathsig, watch_parent

    pid, start, tmp = int(argv[1]), argv[2], argv[3]
    voila_args = argv[argv.index("--") + 1:]
    started = (b"?", int(start)) if start else None
    set_pdeathsig(signal.SIGTERM)

    def orphaned():
        shutil.rmtree(tmp, ignore_errors=True)
        os.kill(os.getpid(), signal.SIGTERM)  # Voila's own handler: stop the server and its kernels
        import time

        time.sleep(STOP_TIMEOUT_S)

    if not parent_alive(pid, started):
        shutil.rmtree(tmp, ignore_errors=True)
        return 1
    watch_parent(pid, started, on_death=orphaned)
    sys.argv = voila_args[1:] if voila_args[:1] == ["-m"] else voila_args
    sys.argv[0] = "voila"
    try:
        runpy.run_module("voila", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    finally:
        if not parent_alive(pid, started):
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--guard"]:
    sys.exit(_guarded(sys.argv[1:]))
