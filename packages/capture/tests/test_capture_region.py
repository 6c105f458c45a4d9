"""ThreadRegion: a nesting depth per thread, restored when the region's block raises."""

from __future__ import annotations

import threading

import pytest

from numpile_capture.region import ThreadRegion


def test_depth_nests_and_unwinds() -> None:
    region = ThreadRegion()
    with region.entered():
        assert (region.depth, region.active) == (1, True)
        with region.entered():
            assert region.depth == 2
        assert region.depth == 1
    assert (region.depth, region.active) == (0, False)


def test_depth_is_restored_when_the_block_raises() -> None:
    region = ThreadRegion()
    with pytest.raises(ValueError), region.entered():
        raise ValueError("inside")
    assert not region.active


def test_each_thread_counts_its_own_depth() -> None:
    region = ThreadRegion()
    seen: list[bool] = []
    with region.entered():
        thread = threading.Thread(target=lambda: seen.append(region.active))
        thread.start()
        thread.join()
        assert region.active
    assert seen == [False]
