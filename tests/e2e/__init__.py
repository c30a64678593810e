"""End-to-end tests: whole releases through Dagster and its UI."""
