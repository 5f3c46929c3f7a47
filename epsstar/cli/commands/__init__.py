"""One module per subcommand, each with register(subparsers)."""
