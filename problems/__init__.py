"""The contest problems: each folder is a task.yml plus task.py, reference.py and a template."""
