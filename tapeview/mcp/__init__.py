"""The MCP server: the REST API's tools for agents, at /mcp (stateless Streamable HTTP) and over stdio."""
