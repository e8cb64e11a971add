"""The ``numalab`` command: a thin argparse layer over the library.

Each subcommand lives in ``numalab/commands/<name>.py`` with two functions,
``add_parser(subparsers)`` and ``run(args) -> int``; heavy imports happen inside ``run`` so
``numalab --help`` stays fast. Library errors (``ValueError`` naming the bad parameter) are
printed as one line on stderr with exit status 2, never as a traceback; output paths are
checked before any work starts (:func:`numalab.commands.add_output`, :func:`check_outputs`); an environment failure (disk full, out of
memory) is one line with status 1; only a bug in numalab prints a traceback, with a line
asking to report it (status 1). SIGTERM unwinds like Ctrl-C, so worker pools are stopped.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from importlib import import_module

from ._version import __version__

# the order is the order of ``numalab --help``
COMMANDS = ["simulate", "trace", "sweep", "futex", "report", "reproduce", "compare", "probe", "demo", "explore"]


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error: ``numalab sweep: error: argument --seeds: ...
    (see numalab sweep --help)``, exit status 2 (argparse prints the whole usage first)."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(str(message).split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="numalab",
        description=(
            "Simulate Linux automatic NUMA balancing (access-PID history, scan filter) and "
            "futex hash-bucket contention; print mmtests / kernel-test-robot tables."
        ),
    )
    parser.add_argument("--version", action="version", version=f"numalab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = import_module(f"numalab.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"numalab.commands.{name}":
                raise
            continue  # not built yet
        module.add_parser(sub)
    return parser


#: exit status of a user error (a bad argument or value), as argparse uses
EXIT_USAGE = 2
#: exit status of an environment failure (disk full, out of memory) and of an internal error
EXIT_FAILURE = 1


from .signals import Terminated  # noqa: E402  (re-exported: numalab.cli.Terminated)


def check_outputs(args) -> None:
    """Every output path of ``args`` (declared with :func:`numalab.commands.add_output`) checked before the
    command does any work (:func:`numalab.errors.check_out_path`): a figure's format too, and
    no two outputs may name the same file (``--out x.png --plot x.png`` wrote the figure over
    the Dataset)."""
    import os

    from .errors import NumalabValueError, check_out_path

    seen: dict[str, str] = {}
    for dest, flag, kind, create, figure in getattr(args, "_outputs", None) or []:
        value = getattr(args, dest, None)
        if value is None:
            continue
        path = check_out_path(flag, value, kind=kind, create=create)
        if figure:
            check_figure_path(flag, path)
        key = os.path.realpath(path)
        if key in seen:
            raise NumalabValueError(f"{flag}={str(value)!r} names the same file as {seen[key]}; each output needs a "
                                    "path of its own")
        seen[key] = flag


def check_figure_path(name: str, path) -> None:
    """A figure's file name ends in a format matplotlib writes (``.png``, ``.pdf``, ``.svg``, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase

    from .errors import NumalabValueError

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path).rsplit("/", 1)[-1] else ""
    if suffix not in formats:
        raise NumalabValueError(f"{name}={str(path)!r}: a figure is written as one of {', '.join(sorted(formats))}; "
                                f"give the file name one of these suffixes (e.g. {str(path).rsplit('.', 1)[0]}.png)")


def preflight(args) -> None:
    """The cost of ``numalab simulate`` / ``trace`` checked before any work (issue 17): time
    steps (``max_time / dt``) and memory (:mod:`numalab.limits`), from the sizes of the
    workload. The engine's own boundary does the same for ``nl.simulate``; this makes the
    command refuse at once, before building anything large."""
    if args.command not in ("simulate", "trace"):
        return
    from .commands.simulate import options_from_args
    from .engine import DEFAULTS
    from .errors import check_int, check_number, check_seed
    from .limits import check_simulate
    from .topology import Topology
    from .workloads import workload

    dt = DEFAULTS["dt"] if getattr(args, "dt", None) is None else check_number("--dt", args.dt, lo=0.0, lo_open=True)
    max_time = (DEFAULTS["max_time"] if args.max_time is None
                else check_number("--max-time", args.max_time, lo=0.0, lo_open=True))
    opts = options_from_args(args)  # every --option / --no-<mechanism> checked here, before any work
    if args.command == "simulate":
        seeds = check_int("--seeds", args.seeds, lo=1, hi=10000)
        n_pol = max(1, len(args.profile or [0, 0, 0])) * max(1, len(args.history or [0]))
    else:
        check_seed("--seed", args.seed)
        seeds, n_pol = 1, 1
    wl = workload(args.workload, Topology.coerce(args.topology))
    check_simulate(wl, n_pol, seeds, dt=opts.get("dt", dt), max_time=opts.get("max_time", max_time),
                   time_resolution=opts.get("time_resolution", DEFAULTS["time_resolution"]),
                   scan_size_mb=opts.get("scan_size_mb"))


def _is_user_error(exc: BaseException) -> bool:
    """A ValueError is the user's when numalab raised it (check_* at the boundary, a reader
    naming the line); one raised from inside numpy/xarray is a bug in numalab."""
    from .errors import NumalabError

    if isinstance(exc, NumalabError):
        return True
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return True
    mod = last.tb_frame.f_globals.get("__name__", "")
    return mod == "numalab" or mod.startswith("numalab.")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    import os

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    debug = bool(os.environ.get("NUMALAB_DEBUG"))
    name = f"numalab {args.command}"
    from . import signals

    old = None
    try:
        # inside the try: a signal that comes the moment the handlers are in place is this
        # command's interruption too, not a traceback
        old = signals.install()
        check_outputs(args)
        preflight(args)
        module = import_module(f"numalab.commands.{args.command}")
        rc = int(module.run(args) or 0)
        signals.check()  # a signal Python dropped (raised inside a __del__) still counts
        return rc
    except ValueError as exc:  # includes NumalabValueError: a bad knob, already explained
        if not _is_user_error(exc):
            return _internal(name, exc)
        if debug:
            traceback.print_exc()
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `numalab demo | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")  # no second error when Python flushes stdout at exit
            sys.stderr.close()
        except OSError:  # pragma: no cover
            pass
        return 0
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"{name}: terminated by signal {exc.signum}", file=sys.stderr)
        return 128 + exc.signum
    except MemoryError:
        print(f"{name}: error: out of memory; use smaller sizes or fewer seeds "
              "(numalab refuses calls it estimates above NUMALAB_MEMORY_LIMIT)", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:  # a write or read failed (disk full, ulimit -f, permissions): not a bug
        if debug:
            traceback.print_exc()
        what = _one_line(exc) if exc.__class__.__name__ == "WriteError" else (
            f"{exc.strerror or _one_line(exc)}" + (f": {exc.filename!r}" if getattr(exc, "filename", None) else ""))
        print(f"{name}: error: {what}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # a bug in numalab: show where, ask for a report
        return _internal(name, exc)
    finally:
        if old is not None:
            signals.restore(old)


def _internal(name: str, exc: BaseException) -> int:
    traceback.print_exception(exc)
    print(f"{name}: internal error ({type(exc).__name__}); this is a bug in numalab {__version__}: please "
          "report it with the command line and the traceback above", file=sys.stderr)
    return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
