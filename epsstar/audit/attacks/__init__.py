"""Membership tests: each attack's scores audited like losses, reference models' records, the gate over attacks, slices."""
