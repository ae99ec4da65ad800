"""problems.shared.draw_graph: a replay writes every captured table as an ordinary draw under its seed would."""

from __future__ import annotations

import torch

from problems.shared import counter_rng
from problems.shared.draw_graph import CapturedDraw, TableWriter, replay

STREAMS = [("a", 40), ("empty", 0), ("sfa", 8), ("b[1]", 3)]


class Launches:
    """Stands in for the generator's Triton kernels (no GPU here): records a copy of the table each launch reads."""

    def __init__(self) -> None:
        self.tables: list[torch.Tensor] = []

    def __getitem__(self, grid):
        return lambda table, *args, **kwargs: self.tables.append(table.clone())


class Graph:
    """Stands in for the CUDA graph: at its replay, records what its tables hold (what its kernels would read)."""

    def __init__(self, tables: list[torch.Tensor]) -> None:
        self.tables, self.read = tables, []

    def replay(self) -> None:
        self.read = [table.clone() for table in self.tables]


def test_a_replay_writes_the_tables_an_ordinary_draw_under_its_seed_launches_with(monkeypatch):
    launches = Launches()
    monkeypatch.setattr(counter_rng, "_triton_kernels", lambda: (launches, launches))
    cpu = torch.device("cpu")
    with counter_rng.captured_tables() as capture:
        words = counter_rng._words_triton(0, STREAMS, cpu)
    graph = Graph([table for table, _, _ in capture.tables])
    captured = CapturedDraw(graph, words, capture.tables)
    for seed in (7, 2**63 - 1, 12345678901234):
        assert replay(captured, seed) is words  # the graph's own tensors, reused
        counter_rng._words_triton(seed, STREAMS, cpu)
        ordinary = launches.tables[-1]
        (read,) = graph.read
        assert torch.equal(read[:, 1:], ordinary[:, 1:])  # the word counts and the seed's keys; addresses differ
        assert torch.equal(read[:, 0], torch.tensor([w.data_ptr() for w in words if w.numel()]))  # the graph's own


def test_the_keys_written_are_the_seeds_and_differ_between_seeds():
    """The bookkeeping itself: only the named rows' key words change with the seed."""
    rows = [(100, 40, 1, 2), (200, 8, 3, 4)]
    keyed = {16: "a", 32 + 16: "sfa"}
    first, second = (counter_rng.seeded_table(rows, keyed, seed) for seed in (1, 2))
    assert first[:, :2].tolist() == second[:, :2].tolist() == [[100, 40], [200, 8]]
    assert first[0, 2:].tolist() == list(counter_rng.stream_keys(1, "a"))
    assert second[1, 2:].tolist() == list(counter_rng.stream_keys(2, "sfa"))
    assert first[:, 2:].tolist() != second[:, 2:].tolist()
    assert counter_rng.seeded_table(rows, {}, 1).tolist() == [list(row) for row in rows]  # a codes table: as captured


def test_the_writer_fills_in_what_seeded_table_makes_and_keeps_its_template():
    """TableWriter (one host array, the keyed words filled in per seed) against seeded_table, the definition,
    over tables of several rows, a table with no keyed row, and seeds one after another."""
    rows_a, keyed_a = [(100, 40, 1, 2), (200, 8, 3, 4), (300, 5, 5, 6)], {16: "a", 64 + 16: "b[1]"}
    rows_b, keyed_b = [(7, 8, 9)], {}
    rows_c, keyed_c = [(400, 3, 0, 0)], {16: "sfa"}
    tables = [(torch.zeros(len(rows) * len(rows[0]), dtype=torch.int64), rows, keyed)
              for rows, keyed in ((rows_a, keyed_a), (rows_b, keyed_b), (rows_c, keyed_c))]
    writer = TableWriter(tables)
    for seed in (1, 2**63 - 1, 1, 99):
        writer.write(seed)
        for table, rows, keyed in tables:
            assert table.tolist() == counter_rng.seeded_table(rows, keyed, seed).view(-1).tolist()
