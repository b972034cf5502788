"""MCP: the protocol vocabulary, the tools, the prompts and
the streamable HTTP transport (dispatch: mcp_rpc.py)."""
