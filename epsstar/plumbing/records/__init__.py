"""Typed records between layers: their JSON form, its types, a value for each side and the
constraints declared on their fields (the only plumbing the statistics read)."""
