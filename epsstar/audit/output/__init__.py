"""The typed results of an audit, the numbers the reports draw, and the staged writing of output files."""
