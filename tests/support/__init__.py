"""Helpers shared by several test files: builders and constants, no tests of their own."""
