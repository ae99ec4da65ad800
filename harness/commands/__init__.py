"""The command line: one module per ``python -m harness`` command, each a thin layer over the rest."""
