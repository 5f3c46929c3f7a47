"""Files in and out: declared schemas, the bound on a structured file, the one JSON parser,
staged and atomic writes, and SHA-256 digests."""
