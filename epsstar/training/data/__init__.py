"""Tables for the trainer and the shipped and generated data sets."""
