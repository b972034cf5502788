"""MCP: protocol vocabulary, tools, prompts, the streamable HTTP transport (dispatch: mcp_rpc.py)."""
