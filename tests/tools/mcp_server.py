"""A small MCP server for the tests: ``python mcp_server.py`` serves over stdio,
``python mcp_server.py http PORT`` over streamable HTTP on 127.0.0.1."""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-calculator", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def wait(seconds: float) -> str:
    """Wait for some seconds, then answer."""
    time.sleep(seconds)
    return f"waited {seconds}"


@server.tool()
def fail(message: str) -> str:
    """Always raises."""
    raise ValueError(message)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
