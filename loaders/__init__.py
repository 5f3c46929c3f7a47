"""Model loaders, installed as ``epsstar.loaders``.

A loader turns a saved model file into an object that returns per-record
predictions; losses are computed from those predictions in core
(:mod:`epsstar.losses`), the same way for every loader.
"""
