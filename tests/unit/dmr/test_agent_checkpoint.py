"""The agent holds an application's checkpoint (``dmr-run --on-failure continue``): bytes over its
socket, the newest step kept, kept across a restart; a restart ends expander agents' watch."""

from __future__ import annotations

import os

import pytest

from dmr.agent import Agent, AgentClient, serve
from dmr.launch import LaunchSpec


@pytest.fixture
def agent():
    a = Agent(LaunchSpec(argv=["true"], cwd="/"), job_id=None)
    server = serve(a)
    yield a
    server.shutdown()
    server.server_close()


def test_a_checkpoint_goes_in_and_comes_back_byte_for_byte(agent: Agent) -> None:
    client = AgentClient(agent.address_text)
    assert client.request("restore")["step"] is None  # nothing held yet
    blob = os.urandom(3 << 20) + b"\n\n{not json"  # larger than a request line may be, with newlines
    client.request("checkpoint", blob, step=6)
    client.request("checkpoint", b"older", step=3)  # a late send from before: not kept
    reply = client.request("restore")
    assert reply["step"] == 6 and reply["data"] == blob
    assert client.request("ping") == {"ok": True}  # the stream is still in step after the bytes
    client.close()


def test_a_restart_keeps_the_checkpoint_and_ends_the_expander_agents_watch(agent: Agent) -> None:
    app = AgentClient(agent.address_text)
    app.request("checkpoint", b"state", step=9)
    joiner = AgentClient(agent.address_text, timeout=5.0)
    joiner.request("spec")  # an expander job's agent: it then watches this connection
    agent.port = "port-of-the-failed-run"
    agent.restart()
    assert joiner.reader.readline() == b""  # its watch ends: it stops its groups, its job ends
    assert agent.port is None and not agent.procs and not agent.ops
    assert AgentClient(agent.address_text).request("restore")["data"] == b"state"


def test_a_request_without_the_key_gets_nothing(agent: Agent) -> None:
    AgentClient(agent.address_text).request("checkpoint", b"secret", step=1)
    stranger = AgentClient(agent.address_text.rsplit(":", 1)[0] + ":wrong")
    with pytest.raises(RuntimeError, match="wrong or missing agent key"):
        stranger.request("restore")
    # bytes announced without the key are not read (nor held): the connection is closed
    with pytest.raises(ConnectionError):
        AgentClient(agent.address_text.rsplit(":", 1)[0] + ":wrong").request("checkpoint", b"x" * 10, step=9)
    assert agent.checkpoint == (1, b"secret")
