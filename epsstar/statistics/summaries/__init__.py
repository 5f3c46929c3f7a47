"""Losses too many to hold: mergeable sketches and per-side summaries."""
