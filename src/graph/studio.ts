import { createAgent } from "./build.js";

/**
 * The graph langgraph.json serves to LangGraph Studio and the dev server: the same agent, built
 * without a checkpointer because the server brings its own. Importing it needs no API key; the
 * model is built at the first call.
 */
export const graph = createAgent();
