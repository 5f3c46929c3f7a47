"""What every reader of an input file shares: the bound on a structured file (its size and
nesting, :mod:`.bounds`), the rule that a path one file names stays inside its folder
(:mod:`.inside`), and torch's deprecation warnings of TorchScript, a format users' model
files come in, silenced where epsstar reads or writes it (:mod:`.torchscript_deprecation`).

The lowest room of the audit layer: imports only the statistics' JSON types and the
exceptions, so every room above, the loaders and the commands read their files through it.
"""
