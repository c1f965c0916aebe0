"""A bounded excerpt of a long log (``TraceStore.read_excerpt``): its tail and an even
sample of the rest, read by byte offsets."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from calibration_support import write_pair_lines

from pytest_ldd.errors import LddWarning
from pytest_ldd.store.files import TraceStore


def _index(record: dict[str, Any]) -> int:
    return int(str(record["nodeid"]).rsplit("_", 1)[1])


def test_read_excerpt_reads_a_short_log_whole(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    assert store.read_excerpt("pairs", budget=1000).records == []
    write_pair_lines(store, 50)
    whole = store.read_excerpt("pairs", budget=None)
    assert whole.complete
    assert [_index(r) for r in whole.records] == list(range(50))
    assert store.read_excerpt("pairs", budget=1 << 20).records == whole.records


def test_read_excerpt_of_a_long_log_is_its_tail_and_an_even_sample(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    write_pair_lines(store, 20_000, tail='{"metric_name": "accuracy", "metric_ver')
    size = store.calibrations_path.stat().st_size
    excerpt = store.read_excerpt("pairs", budget=200_000, samples=500)
    assert not excerpt.complete
    assert excerpt.size == size
    assert excerpt.tail_from == pytest.approx(size - 100_000, abs=300)
    indices = [_index(r) for r in excerpt.records]
    assert indices == sorted(set(indices))  # file order, each line once
    sampled, tail = indices[: excerpt.sampled], indices[excerpt.sampled :]
    # The tail is every line up to the last complete one (the torn one is not read).
    assert tail == list(range(tail[0], 20_000))
    assert len(tail) == pytest.approx(100_000 / (size / 20_000), abs=2)
    # The sample spreads evenly over what comes before the tail.
    assert len(sampled) == 500
    assert sampled[0] == 0
    gaps = [b - a for a, b in itertools.pairwise(sampled)]
    assert max(gaps) - min(gaps) <= 1
    assert sampled[-1] < tail[0]
    assert store.read_excerpt("pairs", budget=200_000, samples=500) == excerpt
    assert excerpt.describe() == {
        "complete": False,
        "bytes": size,
        "tail_bytes": size - excerpt.tail_from,
        "sampled_lines": 500,
        "records": len(indices),
    }


def test_read_excerpt_skips_a_malformed_line_of_an_excerpt_with_a_warning(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    write_pair_lines(store, 5000, tail="not json\n")
    with pytest.warns(LddWarning, match=r"byte \d+ of a sampled read"):
        excerpt = store.read_excerpt("pairs", budget=20_000, samples=10)
    assert _index(excerpt.records[-1]) == 4999
