import type { Settings } from "../core/settings.js";
import { type AgentState, blockExecution, failAttempt } from "../core/state.js";
import type { AgentNode, AgentRuntime, NodeDeps } from "../nodes/types.js";

/** What a verifier reports when the attempt must fail. */
export interface Finding {
  /** Becomes the error type: part of the fingerprint and of the fixer's prompt. */
  type: string;
  message: string;
}

export interface VerifierContext {
  settings: Settings;
  deps: NodeDeps;
  config: AgentRuntime;
}

/**
 * A check that can fail an attempt. `before` verifiers see the program before it runs, and a
 * finding keeps it from running; `after` verifiers see the run too, and fail one that exited
 * cleanly. A finding is an error like any other: fingerprinted, deduplicated, counted as the
 * attempt's failure, and shown to the fixer.
 */
export interface Verifier {
  name: string;
  stage: "before" | "after";
  check: (
    state: AgentState,
    context: VerifierContext,
  ) => Finding | null | undefined | Promise<Finding | null | undefined>;
}

/**
 * An extra node placed before execution (after the program is written) or after it (before the
 * critic). Give the node itself, or `create` it from the agent's models and sandbox.
 */
export type ExtraStep = { name: string; node: AgentNode } | { name: string; create: (deps: NodeDeps) => AgentNode };

export const CORE_NODES = ["generator", "approval", "executor", "critic", "fixer", "finish"] as const;
export type CoreNodeName = (typeof CORE_NODES)[number];
/** The nodes of a round of candidates (see core/candidates.ts); not replaceable, and no extra step may take their names. */
export const FAN_OUT_NODES = ["candidate", "propose", "join", "probe"] as const;

/** Builds a replacement for a core node; `builtIn` is the node it replaces, for wrapping. */
export type NodeReplacement = (deps: NodeDeps, builtIn: AgentNode) => AgentNode;

export interface AgentExtensions {
  verifiers?: Verifier[];
  /** Steps between writing a program and executing it, in order (a formatter, a dependency check, a test writer). */
  before?: ExtraStep[];
  /** Steps between execution and the critic, in order. */
  after?: ExtraStep[];
  /** Your own node in place of a core one; the routing around it stays. */
  replace?: Partial<Record<CoreNodeName, NodeReplacement>>;
}

interface StagedNode {
  name: string;
  node: AgentNode;
}

export function verifierNode(verifier: Verifier, deps: NodeDeps): AgentNode {
  return async (state, config) => {
    const finding = await verifier.check(state, { settings: config.context, deps, config });
    if (!finding) return {};
    return verifier.stage === "before"
      ? blockExecution(state, verifier.name, finding)
      : failAttempt(state, verifier.name, finding);
  };
}

/** The extra nodes of each stage, verifiers first: a program that fails a check need not be formatted. */
/** The extensions' steps, in order, before execution and after it. */
export interface StagedSteps {
  before: StagedNode[];
  after: StagedNode[];
}

export function stagedSteps(extensions: AgentExtensions, deps: NodeDeps): StagedSteps {
  const verifiersAt = (stage: Verifier["stage"]) =>
    (extensions.verifiers ?? [])
      .filter((verifier) => verifier.stage === stage)
      .map((verifier) => ({ name: verifier.name, node: verifierNode(verifier, deps) }));
  const built = (steps: ExtraStep[] = []) =>
    steps.map((step) => ({ name: step.name, node: "node" in step ? step.node : step.create(deps) }));
  const steps = {
    before: [...verifiersAt("before"), ...built(extensions.before)],
    after: [...verifiersAt("after"), ...built(extensions.after)],
  };
  const names = [...steps.before, ...steps.after].map((step) => step.name);
  const clash = names.find(
    (name, index) => names.indexOf(name) !== index || [...CORE_NODES, ...FAN_OUT_NODES].includes(name as CoreNodeName),
  );
  if (clash) throw new Error(`extra node name "${clash}" is used twice or names a core node; pick another`);
  return steps;
}
