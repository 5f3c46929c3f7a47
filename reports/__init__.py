"""Reports, installed as ``epsstar.reports``: human-readable renderings of audit results."""
