"""A contestant's own history: every `eval` result kept in a per-user SQLite file, listed and compared."""
