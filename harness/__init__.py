"""Evaluate, time and rank NVFP4 kernel submissions."""

__version__ = "0.1.0"
