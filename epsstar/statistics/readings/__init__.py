"""Plain-language readings of ε and conversions between privacy parameters."""
