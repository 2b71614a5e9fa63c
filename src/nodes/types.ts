import type { GraphNodeReturnValue, LangGraphRunnableConfig } from "@langchain/langgraph";
import type { Settings } from "../core/settings.js";
import type { AgentState, AgentUpdate } from "../core/state.js";
import type { Sandbox, SandboxKind } from "../sandbox/types.js";
import type { ModelResolver } from "../tools/models.js";

/** What nodes need from outside the state: injected at graph build time, never at import. */
export interface NodeDeps {
  resolveModel: ModelResolver;
  /** The sandbox of `kind`, keeping `poolSize` interpreters warm per language where it is local. */
  getSandbox: (kind: SandboxKind, poolSize?: number) => Sandbox;
}

/** A node's runtime: LangGraph's, with the run's settings resolved (every default filled in). */
export type AgentRuntime = Omit<LangGraphRunnableConfig, "context"> & { context: Settings };

/** Every selfheal node, core or extra: the state and the resolved settings in, a partial update out. */
export type AgentNode = (state: AgentState, runtime: AgentRuntime) => GraphNodeReturnValue<AgentUpdate>;
