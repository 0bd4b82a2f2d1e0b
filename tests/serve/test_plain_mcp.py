"""Plain MCP clients play a GEM environment through ``gem serve``'s ``/mcp``, with no OpenEnv
extension: the ``mcp`` SDK's own ``Client`` (streamable HTTP, ``Mcp-Session-Id``) gets an
environment of its own on ``initialize``, reset with the URL's seed, steps it with tool calls as
in-process, starts over with the ``reset`` tool, and ends the session; OpenEnv's way (session
ids in params) works beside it on the same server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

import gem_core
from gem_serve.server import EnvServer
from tests.serve.servers import in_thread
from tests.serve.test_mcp import GAME, Peer

mcp = pytest.importorskip("mcp")


async def play(url: str, guesses: list[int]) -> tuple[str, list[dict], list[str]]:
    """The first observation, each step's structured result, and the tools listed."""
    async with mcp.Client(url) as client:
        first = client.instructions
        tools = [tool.name for tool in (await client.list_tools()).tools]
        steps = []
        for guess in guesses:
            result = await client.call_tool("step", {"action": rf"\boxed{{{guess}}}"})
            steps.append(result.structured_content)
            if result.structured_content["done"]:
                break
        again = await client.call_tool("reset", {"seed": 4})  # a new episode in the same session
        assert again.structured_content["step_count"] == 0 and again.structured_content["seed"] == 4
        with pytest.raises(mcp.MCPError, match="'seed': an integer"):
            await client.call_tool("reset", {"seed": "x"})
        return first, steps, tools


def test_the_mcp_sdks_own_client_plays_an_episode_as_in_process():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=4)
    with in_thread(server.app()) as url:
        first, steps, tools = asyncio.run(play(f"{url}/mcp?seed=3", [1, 5, 9, 2, 3, 4, 6, 7, 8, 10]))
        assert tools == ["step", "reset"]
        assert not server.sessions  # the client's exit ended its session (DELETE /mcp)
    env = gem_core.make(GAME)
    observation, _ = env.reset(seed=3)
    assert first == observation
    for structured, guess in zip(steps, [1, 5, 9, 2, 3, 4, 6, 7, 8, 10]):
        observation, reward, terminated, truncated, _ = env.step(rf"\boxed{{{guess}}}")
        assert (structured["observation"], structured["reward"], structured["done"]) == \
               (observation, reward, terminated or truncated)
    assert steps[-1]["done"]


def test_sessions_opened_beforehand_are_reached_by_path_and_their_episode_is_theirs():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=4)
    with in_thread(server.app()) as url:
        async def scenario():
            session = await server.open_session()
            await session.reset(7, None, {})
            heard = []
            session.step_listeners.append(heard.append)
            async with mcp.Client(f"{url}/sessions/{session.id}/mcp") as client:
                assert client.instructions == session.observation
                assert [tool.name for tool in (await client.list_tools()).tools] == ["step"]
                await client.call_tool("step", {"action": r"\boxed{4}"})
                with pytest.raises(mcp.MCPError, match="Unknown tool 'reset'"):  # whoever opened it runs the episode
                    await client.call_tool("reset", {"seed": 7})
            return session, heard

        session, heard = asyncio.run(scenario())
        assert [data["observation"]["metadata"]["step_count"] for data in heard] == [1]
        assert session.id not in server.sessions


def test_openenv_sessions_and_plain_ones_side_by_side_and_errors():
    server = EnvServer(lambda: gem_core.make(GAME), GAME, max_sessions=4)
    with in_thread(server.app()) as url:
        peer = Peer(url)
        openenv_session = peer.result("openenv/session/create")["session_id"]
        peer.reset(openenv_session, seed=1)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        answer = httpx.post(f"{url}/mcp?seed=2", json=initialize)
        plain = answer.headers["mcp-session-id"]
        assert plain != openenv_session and answer.json()["result"]["instructions"] == gem_core.make(GAME).reset(seed=2)[0]
        step = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "step",
                                                                              "arguments": {"action": r"\boxed{5}"}}}
        mine = httpx.post(f"{url}/mcp", json=step, headers={"Mcp-Session-Id": plain}).json()["result"]
        theirs = peer.result("tools/call", name="step", arguments={"action": r"\boxed{5}"}, session_id=openenv_session)
        assert mine["structuredContent"]["step_count"] == 1
        assert theirs["structuredContent"]["step_count"] == 1
        assert server.sessions[plain].seed == 2 and server.sessions[openenv_session].seed == 1
        assert httpx.post(f"{url}/mcp", json=step, headers={"Mcp-Session-Id": "gone"}).status_code == 404
        assert httpx.get(f"{url}/mcp").status_code == 405
        assert httpx.post(f"{url}/mcp?seed=x", json=initialize).json()["error"]["code"] == -32602
        assert httpx.delete(f"{url}/mcp", headers={"Mcp-Session-Id": plain}).status_code == 204
        assert plain not in server.sessions and openenv_session in server.sessions
        listed = json.loads(httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).text)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["step"]  # no session: no reset tool
