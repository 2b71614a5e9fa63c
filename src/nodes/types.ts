import type { GraphNode } from "@langchain/langgraph";
import type { State } from "../graph/state.js";
import type { ModelResolver } from "../tools/models.js";
import type { Sandbox, SandboxKind } from "../tools/sandbox/types.js";

/** What nodes need from outside the state: injected at graph build time, never at import. */
export interface NodeDeps {
  resolveModel: ModelResolver;
  getSandbox: (kind: SandboxKind) => Sandbox;
}

export type AgentNode = GraphNode<typeof State>;
