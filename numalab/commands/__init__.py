"""One module per ``numalab`` subcommand: ``add_parser(subparsers)`` and ``run(args)``."""

__all__ = ["add_output"]


def add_output(parser, *flags, kind: str = "file", create: bool = False, figure: bool = False, **kwargs):
    """``parser.add_argument(*flags, **kwargs)`` for an output path, declared so that
    :func:`numalab.cli.check_outputs` checks it before the command does any work: ``kind="file"`` or
    ``"dir"`` (``create``: a directory that may be made), ``figure``: a file matplotlib can
    write (its suffix one of the formats it knows). Every output option of every subcommand
    is added with this."""
    action = parser.add_argument(*flags, **kwargs)
    specs = list(parser.get_default("_outputs") or [])
    specs.append((action.dest, flags[0], kind, create, figure))
    parser.set_defaults(_outputs=specs)
    return action
