"""What the problems share: the counter-based generator, the operand formats, seeded operands and the check,
input digests, and the contest's utils helpers. A problem is a sibling folder with a task.yml."""
