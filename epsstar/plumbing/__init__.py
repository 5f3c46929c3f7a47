"""The ground floor: what every room uses and no room owns (JSON records and their types).

It imports nothing of epsstar but the exceptions, so any layer may build on it.
"""
