"""The contracts users and plugins rely on: the registries' names and the JSON schemas."""
