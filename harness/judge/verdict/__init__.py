"""The verdict policy: the case loop, each call checked, seeds, the stopping rule, modes and scores."""
