"""The wire protocol: round trips, versioning, clear errors."""

from __future__ import annotations

import json

import pytest

from slurm_ext import protocol as p


def test_check_round_trip():
    msg = p.Check(
        job_id=7,
        current=1,
        min=1,
        max=4,
        factor=2,
        preferred=None,
        nodes=["n1"],
        groups=[{"tag": "g0", "job_id": 7, "nodes": ["n1"], "size": 2}],
        agent="h:1:k",
        python="/usr/bin/python3",
    )
    back = p.decode_request(msg.encode())
    assert back == msg


def test_decision_round_trip_and_line_framing():
    raw = p.Decision(action="expand", new_size=2, nodes=["n2"], token="t1", reason="free").encode()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert p.decode_response(raw) == p.Decision("expand", 2, ["n2"], "t1", "free")


def test_other_version_is_refused():
    obj = p.Ping().to_dict() | {"v": 99}
    with pytest.raises(p.ProtocolError, match="version 99"):
        p.decode_request(json.dumps(obj))


def test_unknown_type_lists_valid_ones():
    with pytest.raises(p.ProtocolError, match="valid: check"):
        p.decode_request('{"v": 3, "type": "explode"}')


def test_garbage_and_missing_fields():
    with pytest.raises(p.ProtocolError, match="not JSON"):
        p.decode_request(b"{nope")
    with pytest.raises(p.ProtocolError, match="bad check"):
        p.decode_request('{"v": 3, "type": "check", "job_id": 1}')


def test_unknown_action_refused():
    with pytest.raises(p.ProtocolError, match="unknown action"):
        p.decode_response('{"v": 3, "type": "decision", "action": "explode"}')


def test_unknown_fields_are_ignored_for_forward_compatibility():
    msg = p.decode_request('{"v": 3, "type": "ping", "extra": 3}')
    assert isinstance(msg, p.Ping)


def test_parse_address():
    assert p.parse_address("127.0.0.1:9") == ("127.0.0.1", 9)
    assert p.parse_address("host") == ("host", p.DEFAULT_PORT)
    with pytest.raises(ValueError, match="host:port"):
        p.parse_address("h:x")
