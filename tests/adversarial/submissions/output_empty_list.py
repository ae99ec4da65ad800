"""Wrong output, grouped problem: an empty list (a checker looping over the outputs checks nothing)."""


def custom_kernel(data):
    return []
