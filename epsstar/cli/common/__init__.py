"""What several subcommands share: options, progress bars, text tables."""
