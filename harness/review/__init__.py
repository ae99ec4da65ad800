"""The organizer's review of a leaderboard's top entries: static read, physics floor, dynamic re-checks."""
