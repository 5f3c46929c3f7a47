"""The ground floor: what several rooms use and no room owns.

JSON records and their types (:mod:`.json_records`, :mod:`.json_types`, a value for each
side: :mod:`.by_side`), the constraints declared on the fields of options records
(:mod:`.constraints`), the declared
schemas of configuration files (:mod:`.schema`), the bound on a structured file and the one
JSON parser (:mod:`.input_bounds`, :mod:`.json_parsing`), staged and atomic writes
(:mod:`.staging`), SHA-256 digests (:mod:`.digests`), the torch device (:mod:`.device`),
the intra-op threads (:mod:`.threads`) and TorchScript's deprecation warnings
(:mod:`.torchscript_deprecation`).

It imports nothing of epsstar but the exceptions, so any layer may build on it; the
statistics read only its JSON records, their types and the constraints.
"""
