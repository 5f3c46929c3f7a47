"""Loaders for the native files of further model libraries (each an optional extra)."""
