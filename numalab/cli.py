"""The ``numalab`` command: a thin argparse layer over the library.

Each subcommand lives in ``numalab/commands/<name>.py`` with two functions,
``add_parser(subparsers)`` and ``run(args) -> int``; heavy imports happen inside ``run`` so
``numalab --help`` stays fast. Library errors (``ValueError`` naming the bad parameter) are
printed as one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from ._version import __version__

# the order is the order of ``numalab --help``
COMMANDS = ["simulate", "trace", "sweep", "futex", "report", "reproduce", "demo", "explore"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    module = import_module(f"numalab.commands.{args.command}")
    try:
        return int(module.run(args) or 0)
    except ValueError as exc:  # includes NumalabValueError: a bad knob, already explained
        print(f"numalab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `numalab demo | head`: the reader left, nothing to report
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"numalab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
