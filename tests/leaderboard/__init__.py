"""Tests of harness/leaderboard (a package, so its module names cannot clash with tests/)."""
