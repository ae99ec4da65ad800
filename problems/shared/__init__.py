"""What the problems share: the input generator, the operand formats, seeded operands and the check.

Also the input digests and the contest's utils helpers. A problem is a sibling folder with a task.yml.
"""
