"""A small interpreter of the PTX subset harness/contract/leaf_hash.py writes, for one thread: the CPU's
way to run the leaf kernel's own text against hashlib (the device runs the same check for real,
scripts/leaf_hash_check.py), and the Triton baselines' inline-asm decode snippets against an e2m1
table (``run_snippet``). Instructions it does not know raise, so a kernel that grows past the
subset fails its test rather than passing unread."""

from __future__ import annotations

import re
import struct
from typing import Any

MASKS = {"8": 0xFF, "16": 0xFFFF, "32": 0xFFFFFFFF, "64": 0xFFFFFFFFFFFFFFFF}


def _bits(kind: str) -> int:
    return int(re.sub(r"\D", "", kind))


class Thread:
    """One thread of a launch: registers, its local array, and the global memory it shares."""

    def __init__(self, ptx: str, memory: bytearray, params: dict[str, int], special: dict[str, int]) -> None:
        self.memory, self.params, self.special = memory, params, special
        self.registers: dict[str, int] = {}
        self.local = bytearray(1 << 12)
        self.local_names: dict[str, int] = {}
        self.constant = bytearray()
        self.constant_names: dict[str, int] = {}
        for name, values in re.findall(r"\.const \.align \d+ \.b32 (\w+)\[\d+\] = \{([^}]*)\};", ptx):
            self.constant_names[name] = len(self.constant)
            self.constant += b"".join(int(v, 0).to_bytes(4, "little") for v in values.split(","))
        entry = ptx.index(".entry")
        body = ptx[ptx.index("{", entry) + 1:ptx.rindex("}")]
        self.lines = [line.strip().rstrip(";") for line in body.splitlines() if line.strip()]
        self.labels = {line[:-1]: at for at, line in enumerate(self.lines) if line.endswith(":")}

    def _value(self, operand: str) -> int:
        operand = operand.strip()
        if operand in self.special:
            return self.special[operand]
        if operand in self.local_names:
            return self.local_names[operand]
        if operand in self.constant_names:
            return self.constant_names[operand]
        if operand.startswith("%") or operand in self.registers:
            return self.registers[operand]
        return int(operand, 0)

    def _address(self, operand: str) -> int:
        inner = operand.strip()[1:-1]
        base, _, offset = inner.partition("+")
        return self._value(base) + (int(offset) if offset else 0)

    def _load(self, space: str, address: int, size: int) -> int:
        source = {"global": self.memory, "local": self.local, "const": self.constant}[space]
        return int.from_bytes(source[address:address + size], "little")

    def _store(self, space: str, address: int, size: int, value: int) -> None:
        target = self.memory if space == "global" else self.local
        target[address:address + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def run(self, limit: int = 10_000_000) -> None:
        at = 0
        for _ in range(limit):
            if at >= len(self.lines):
                return
            line = self.lines[at]
            at += 1
            if line.endswith(":") or line.startswith(".reg"):
                continue
            if line.startswith(".local"):
                name = line.split()[-1].split("[")[0]
                self.local_names[name] = 16 * (len(self.local_names) + 1) * 64
                continue
            predicate = None
            if line.startswith("@"):
                predicate, line = line.split(None, 1)
            if predicate and bool(self.registers[predicate.lstrip("@!")]) == predicate.startswith("@!"):
                continue
            opcode, _, rest = line.partition(" ")
            if opcode == "ret":
                return
            if opcode == "bra":
                at = self.labels[rest.strip()]
                continue
            self._execute(opcode, [part.strip() for part in re.split(r",(?![^{]*})", rest)])
        raise RuntimeError("the thread ran past its instruction limit")

    def _execute(self, opcode: str, operands: list[str]) -> None:
        parts = opcode.split(".")
        name, kind = parts[0], parts[-1]
        mask = MASKS.get(str(_bits(kind)), MASKS["64"]) if kind[-1].isdigit() else MASKS["64"]
        out = operands[0]
        values: Any
        if name in ("ld", "st"):
            space = parts[1]
            if space == "param":
                self.registers[out] = self.params[operands[1][1:-1]]
                return
            size = _bits(kind) // 8
            vector = parts[2] == "v4"
            if name == "ld":
                address = self._address(operands[1])
                names = out.strip("{}").split(",") if vector else [out]
                for index, register in enumerate(names):
                    self.registers[register.strip()] = self._load(space, address + index * size, size)
            else:
                address = self._address(operands[0])
                names = operands[1].strip("{}").split(",") if vector else [operands[1]]
                for index, register in enumerate(names):
                    self._store(space, address + index * size, size, self._value(register))
            return
        values = [self._value(operand) for operand in operands[1:]]
        if kind == "f16x2":  # mul.rn.f16x2: two fp16 products, each rounded to nearest
            self.registers[out] = _f16x2_product(values[0], values[1])
            return
        if name == "setp":
            left, right = values
            compare = {"ge": left >= right, "lt": left < right, "ne": left != right}[parts[1]]
            self.registers[out] = int(compare)
            return
        result = {
            "mov": lambda: values[0],
            "cvt": lambda: values[0],
            "add": lambda: values[0] + values[1],
            "sub": lambda: values[0] - values[1],
            "mul": lambda: values[0] * values[1],
            "min": lambda: min(values),
            "and": lambda: values[0] & values[1],
            "or": lambda: values[0] | values[1],
            "xor": lambda: values[0] ^ values[1],
            "not": lambda: ~values[0],
            "shl": lambda: values[0] << values[1],
            "shr": lambda: values[0] >> values[1],
            "shf": lambda: ((values[1] << 32 | values[0]) >> (values[2] & 31)),
            "prmt": lambda: _permute(values[0], values[1], values[2]),
        }[name]()
        if name == "mul" and parts[1] == "wide":
            mask = MASKS["64"]
        self.registers[out] = result & mask


def _permute(low: int, high: int, selector: int) -> int:
    """prmt.b32's default mode: each selector nibble picks one of 8 bytes; its bit 3 replicates that byte's sign."""
    source = (high << 32 | low).to_bytes(8, "little")
    picked = []
    for i in range(4):
        nibble = (selector >> (4 * i)) & 0xF
        byte = source[nibble & 7]
        picked.append((0xFF if byte & 0x80 else 0) if nibble & 8 else byte)
    return int.from_bytes(bytes(picked), "little")


def _f16x2_product(left: int, right: int) -> int:
    halves = [struct.unpack("<e", struct.pack("<H", (word >> shift) & 0xFFFF))[0]
              for word in (left, right) for shift in (0, 16)]
    low, high = (struct.unpack("<H", struct.pack("<e", halves[i] * halves[i + 2]))[0] for i in (0, 1))
    return high << 16 | low


def run_snippet(asm: str, operands: dict[str, int]) -> dict[str, int]:
    """One thread through an inline-asm snippet (the text of ``tl.inline_asm_elementwise``): its ``$n``
    operands set from ``operands``, every register after it returned."""
    statements = [part.strip() for part in re.split(r"[;{}\n]", asm) if part.strip()]
    thread = Thread(".entry snippet {\n" + "\n".join(statements) + "\n}", bytearray(), {}, {})
    thread.registers.update(operands)
    thread.run()
    return thread.registers


def launch(ptx: str, memory: bytearray, params: dict[str, int], threads: int) -> None:
    """Run ``threads`` threads of one block, each to its ``ret``."""
    for thread in range(threads):
        Thread(ptx, memory, params, {"%ctaid.x": 0, "%ntid.x": threads, "%tid.x": thread}).run()
