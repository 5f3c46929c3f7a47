"""Where the records are streamed through the model: one process, or a Dask cluster."""
