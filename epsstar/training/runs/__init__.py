"""Training runs: one model into a folder, sweeps, reference models, their exports and fingerprints."""
