"""The organizer's leaderboard: evaluate every submission in ranked mode, store, rank, render.

One module per job: ``runner`` (find and evaluate files), ``store`` (SQLite through numbered
migrations), ``rank`` (pure scoring), ``render`` (Markdown, HTML, JSON); the command is
``harness.commands.leaderboard_command``. See docs/leaderboard.md.
"""
