"""The fleet-wide log watches' cursors: one per chain and watch, never moved back."""

from __future__ import annotations

from sqlalchemy import Engine

from yieldagent.storage.watch_cursors import WatchCursorStore


def test_a_cursor_is_kept_per_chain_and_watch_and_only_moves_forward(engine: Engine) -> None:
    cursors = WatchCursorStore(engine)
    assert cursors.cursor(8453, "module") is None
    cursors.advance(8453, "module", 120)
    cursors.advance(8453, "module", 90)  # a read of older blocks does not take it back
    cursors.advance(1, "module", 7)
    assert cursors.cursor(8453, "module") == 120
    assert cursors.cursor(1, "module") == 7
    assert cursors.cursor(8453, "transfers") is None
    cursors.advance(8453, "module", 121)
    assert cursors.cursor(8453, "module") == 121
