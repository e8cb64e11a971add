"""One module per ``numalab`` subcommand: ``add_parser(subparsers)`` and ``run(args)``."""

__all__ = ["add_output", "name_values"]


def name_values(flag: str, items, names) -> dict:
    """``NAME=VALUE`` items of a repeatable ``flag`` (``--option``, ``--cost``) -> ``{NAME: VALUE}``:
    VALUE read as JSON (``true`` / ``false`` / ``null`` in any case), else kept as text; a
    missing ``=`` is refused naming ``names``. The names and values are checked by the dataclass
    they go to (EngineOptions, FutexCosts), not here."""
    import json

    from ..errors import NumalabValueError

    out = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep:
            raise NumalabValueError(f"{flag} {item!r}; allowed: NAME=VALUE with NAME one of {', '.join(names)}")
        word = text.strip().lower()
        try:
            out[name.strip()] = json.loads(word if word in ("true", "false", "null") else text)
        except json.JSONDecodeError:
            out[name.strip()] = text.strip()
    return out


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
