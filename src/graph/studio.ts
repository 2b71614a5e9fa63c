import { createAgent } from "./build.js";
import { studioDeclaration } from "./studio-declaration.js";

/**
 * The graph langgraph.json serves to LangGraph Studio and the dev server: the same agent, built
 * without a checkpointer because the server brings its own. Its input is what a person gives
 * (task, language, tests, inputs, expect), and its context schema is the run settings, so Studio
 * offers a form for them with their defaults and bounds. Importing it needs no API key; the
 * model is built at the first call.
 */
export const graph = createAgent({}, studioDeclaration());
