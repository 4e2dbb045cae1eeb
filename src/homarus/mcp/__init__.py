"""MCP servers as tools: one connection per configured server (connection), their tools and
results as Homarus tools (tools), and all of them in the gateway's tool registry (hub)."""
