"""The ground floor: what every room uses and no room owns (JSON records and their types, the
constraints declared on the fields of options records).

It imports nothing of epsstar but the exceptions, so any layer may build on it.
"""
