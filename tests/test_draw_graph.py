"""problems.shared.draw_graph: a replay writes every captured table as an ordinary draw under its seed would."""

from __future__ import annotations

import torch

from problems.shared import counter_rng, kernel_tables
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
    with kernel_tables.captured_tables() as capture:
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


def test_the_writer_writes_each_named_rows_keys_for_the_seed_and_keeps_the_rest_as_captured():
    """The bookkeeping itself, over tables of several rows, a table with no keyed row (a codes table) and
    seeds one after another (the template kept): only a named row's two key words change, to its stream's
    keys under the seed."""
    rows_a, keyed_a = [(100, 40, 1, 2), (200, 8, 3, 4), (300, 5, 5, 6)], {16: "a", 64 + 16: "b[1]"}
    rows_b, keyed_b = [(7, 8, 9)], {}
    rows_c, keyed_c = [(400, 3, 0, 0)], {16: "sfa"}
    tables = [(torch.zeros(len(rows) * len(rows[0]), dtype=torch.int64), rows, keyed)
              for rows, keyed in ((rows_a, keyed_a), (rows_b, keyed_b), (rows_c, keyed_c))]
    writer = TableWriter(tables)
    for seed in (1, 2**63 - 1, 1, 99):
        writer.write(seed)
        a, b, c = (table.view(-1, len(rows[0])).tolist() for table, rows, _ in tables)
        assert a == [[100, 40, *counter_rng.stream_keys(seed, "a")], [200, 8, 3, 4],
                     [300, 5, *counter_rng.stream_keys(seed, "b[1]")]]
        assert b == [[7, 8, 9]]
        assert c == [[400, 3, *counter_rng.stream_keys(seed, "sfa")]]
    assert counter_rng.stream_keys(1, "a") != counter_rng.stream_keys(2, "a")
