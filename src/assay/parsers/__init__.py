"""Parsers of third-party tool output: text in, samples out (pure functions)."""
