// `selfheal/mcp`: selfheal's runs as tools of a Model Context Protocol server, over stdio or
// Streamable HTTP. Its own entry: it loads the MCP SDK and the run store, which `import "selfheal"` must not pay for.

export { ClientSettingsSchema, McpRuns, type McpRunsOptions, type RunListener, type RunOutcome } from "./runs.js";
export { createMcpServer, MAX_INLINE_ARTIFACT_BYTES, MAX_LIVE_LINES_PER_ATTEMPT } from "./server.js";
export { type HttpServer, MAX_REQUEST_BYTES, type ServerInfo, serveHttp, serveStdio } from "./transports.js";
