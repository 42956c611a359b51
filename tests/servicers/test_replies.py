"""VersionedReplies: a reply is answered only at the version it was built at, and the
store stays within its bounds of entries and bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from yieldagent.servicers.replies import VersionedReplies


def test_a_reply_is_answered_at_its_version_only() -> None:
    replies = VersionedReplies()
    replies.put(7, 3, b"at three")

    assert replies.get(7, 3) == b"at three"
    assert replies.get(7, 4) is None
    assert replies.get(8, 3) is None

    replies.put(7, 4, b"at four")
    assert replies.get(7, 3) is None
    assert replies.get(7, 4) == b"at four"
    assert len(replies) == 1
    assert replies.size_bytes == len(b"at four")


def test_the_least_recently_read_goes_first() -> None:
    replies = VersionedReplies(max_entries=2)
    replies.put(1, 0, b"one")
    replies.put(2, 0, b"two")
    assert replies.get(1, 0) == b"one"  # now 2 is the least recently used

    replies.put(3, 0, b"three")

    assert replies.get(2, 0) is None
    assert replies.get(1, 0) == b"one"
    assert replies.get(3, 0) == b"three"


def test_a_reply_beyond_the_byte_bound_is_not_kept() -> None:
    replies = VersionedReplies(max_bytes=4)
    replies.put(1, 0, b"12345")

    assert replies.get(1, 0) is None
    assert replies.size_bytes == 0


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 3), st.binary(max_size=40)), max_size=200
    ),
    st.integers(1, 10),
    st.integers(1, 100),
)
def test_bounds_hold_and_every_kept_reply_is_the_last_put(
    puts: list[tuple[int, int, bytes]], max_entries: int, max_bytes: int
) -> None:
    replies = VersionedReplies(max_entries=max_entries, max_bytes=max_bytes)
    last: dict[int, tuple[int, bytes]] = {}
    for key, version, reply in puts:
        replies.put(key, version, reply)
        last[key] = (version, reply)

        assert len(replies) <= max_entries
        assert replies.size_bytes <= max_bytes
    kept = 0
    for key, (version, reply) in last.items():
        found = replies.get(key, version)
        assert found is None or found == reply
        kept += len(found) if found is not None else 0
    assert kept == replies.size_bytes
