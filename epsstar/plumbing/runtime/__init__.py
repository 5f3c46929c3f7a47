"""Where the computation runs: the torch device, the intra-op threads, and TorchScript's
deprecation warnings silenced where a file is read or written."""
