"""Tests of the top-level modules: spec, hierarchies, io, partitions."""
