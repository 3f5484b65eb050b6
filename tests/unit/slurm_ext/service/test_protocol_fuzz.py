"""Property tests of the decoder: whatever arrives, it answers a message or one ProtocolError."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext import protocol as p

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
TYPES = st.sampled_from([*p.REQUESTS, "decision", "explode", ""])
FIELDS = st.sampled_from(["job_id", "current", "min", "max", "factor", "preferred", "nodes", "groups",
                          "token", "ok", "acks", "rank", "agent", "python", "credential"])  # fmt: skip


def decodes_or_refuses(line: bytes | str) -> None:
    try:
        msg = p.decode_request(line)
    except p.ProtocolError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert msg.TYPE in p.REQUESTS and p.decode_request(msg.encode()) == msg


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes(raw):
    decodes_or_refuses(raw)


@settings(max_examples=250, deadline=None)
@given(st.one_of(st.just(p.VERSION), JSON), TYPES, st.dictionaries(FIELDS, JSON, max_size=6))
def test_any_json_object_shaped_like_a_request(version, kind, body):
    decodes_or_refuses(json.dumps({"v": version, "type": kind, **body}))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, p.MAX_ID),
    st.integers(0, p.MAX_NODES),
    st.integers(0, p.MAX_NODES),
    st.lists(st.text(min_size=1, max_size=10), max_size=5),
)
def test_valid_checks_round_trip(job_id, current, top, nodes):
    msg = p.Check(job_id=job_id, current=current, min=min(current, top), max=top, nodes=nodes)
    assert p.decode_request(msg.encode()) == msg


def test_numbers_out_of_range_are_refused_by_name():
    for field, value in (("max", p.MAX_NODES + 1), ("job_id", -1), ("factor", 0), ("current", 2**70)):
        body = {"v": p.VERSION, "type": "check", "job_id": 1, "current": 1, "min": 1, "max": 2, field: value}
        try:
            p.decode_request(json.dumps(body))
        except p.ProtocolError as exc:
            assert f"$.{field}" in str(exc)
        else:
            raise AssertionError(f"{field}={value} accepted")
