"""The ground floor: what several rooms use and no room owns, in three rooms.

- :mod:`.records`: the records' JSON form and its types, a value for each side, and the
  constraints declared on the fields of options records;
- :mod:`.files`: the declared schemas of configuration files, the bound on a structured
  file and the one JSON parser, staged and atomic writes, SHA-256 digests;
- :mod:`.runtime`: the torch device, the intra-op threads, and TorchScript's deprecation
  warnings.

It imports nothing of epsstar but the exceptions, so any layer may build on it; the
statistics read only its records.
"""
