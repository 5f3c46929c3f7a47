"""What the audit knows of its inputs before it reads them: the rule that a path one file
names stays inside that file's folder (:mod:`.inside`), and a served model's URL
(:mod:`.served`).

The lowest room of the audit layer: imports only the plumbing and the exceptions, so every
room above, the loaders and the commands share it.
"""
