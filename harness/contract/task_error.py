"""The one error a malformed task.yml raises (its own module: the task loader and the formula
evaluator both raise it, and neither imports the other's module for it)."""


class TaskError(Exception):
    """A task.yml (or a case in it) is malformed; the message names the file and the fix."""
