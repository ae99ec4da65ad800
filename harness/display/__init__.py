"""What a person reads: the report table and the live progress display."""
