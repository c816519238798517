"""Structured outputs: checking what a model reports as finished against what the client asked for."""
