"""Tables: reading records by column name, matching columns to a model's inputs, checks of the data, partitions, loss files and digests."""
