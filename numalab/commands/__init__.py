"""One module per ``numalab`` subcommand: ``add_parser(subparsers)`` and ``run(args)``."""
