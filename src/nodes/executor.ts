import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { limitsFromSettings, type Settings } from "../core/settings.js";
import {
  type AgentState,
  type Execution,
  LIVE_LINE_CHARS,
  LIVE_TAIL_LINES,
  type Note,
  type OutputLine,
  objectionsFor,
} from "../core/state.js";
import { tempDirPrefix } from "../sandbox/host/temp-dirs.js";
import type { ArtifactRequest } from "../sandbox/types.js";
import { findExitCalls, locateFailure, settleCompletion, withoutCompletionMark } from "../tools/assemble.js";
import { loadInputs } from "../tools/inputs.js";
import { prepareProgram } from "../tools/judge/prepare.js";
import { isValuesLine, takeRuntimeValues } from "../tools/runtime-values/index.js";
import { runWithPackages } from "./install-packages.js";
import type { AgentNode, AgentRuntime, NodeDeps } from "./types.js";

/** Custom stream event: one line the program printed, sent while it runs. */
export interface OutputEvent {
  kind: "output";
  attempt: number;
  stream: "stdout" | "stderr";
  line: string;
  /** The candidate that printed it (0-based), in a round of candidates. */
  candidate?: number;
}

/** Appends `item`, dropping the oldest once `lines` holds `limit`. */
function keepLast<Item>(lines: Item[], item: Item, limit: number): void {
  lines.push(item);
  if (lines.length > limit) lines.shift();
}

export function notRun(type: string, message: string): Execution {
  return {
    status: "error",
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    truncated: false,
    durationMs: 0,
    error: { type, message, line: null, traceback: "" },
    ran: false,
    failedInTests: false,
    progress: null,
  };
}

/** A thread id is the caller's string: only its safe characters name a folder, and never `..`. */
export function threadFolderName(threadId: string): string {
  return threadId.replace(/[^\w.-]/g, "_").replace(/^\./, "_");
}

/**
 * Where this attempt's artifacts go: `<artifactsDir>/<thread>/attempt-<n>-<random>`, a folder of
 * this execution's own, so time travel that runs attempt n again on another branch never writes
 * into (or deletes) the folder an earlier checkpoint names; or a temp dir removed once they are listed.
 */
async function artifactFolder(
  settings: Settings,
  runtime: AgentRuntime,
  attempt: number,
): Promise<{ request: ArtifactRequest; keep: boolean }> {
  const limits = { maxFiles: settings.maxArtifacts, maxBytes: settings.maxArtifactBytes };
  if (!settings.artifactsDir) {
    return { request: { into: await mkdtemp(tempDirPrefix("artifacts")), ...limits }, keep: false };
  }
  const thread = runtime.configurable?.thread_id;
  const threadFolder = typeof thread === "string" && thread !== "" ? threadFolderName(thread) : `run-${randomUUID()}`;
  const into = join(settings.artifactsDir, threadFolder, `attempt-${attempt}-${randomBytes(4).toString("hex")}`);
  return { request: { into, ...limits }, keep: true };
}

/** What one execution needs of the state: the program, its tests and inputs, and the notes of earlier installs. */
export type ProgramToRun = Pick<AgentState, "code" | "tests" | "language" | "inputs" | "notes">;

/**
 * Runs a program and its tests as attempt `attempt`: in the sandbox, with allowed packages
 * installed on need, streaming its lines, collecting its artifacts. The executor runs the one
 * program of an attempt with it; a candidate runs its own (`candidate` names it in the stream).
 */
export async function executeProgram(
  deps: NodeDeps,
  program: ProgramToRun,
  runtime: AgentRuntime,
  attempt: number,
  candidate?: number,
): Promise<{ lastRun: Execution; notes?: Note[] }> {
  const settings = runtime.context;
  // Read again for every attempt: a file that went away since the generator looked fails this one.
  const inputs = await loadInputs(program.inputs, settings.maxInputBytes);
  if (!inputs.ok) return { lastRun: notRun("InputUnavailable", inputs.reason) };
  const artifacts = await artifactFolder(settings, runtime, attempt);
  const prepared = prepareProgram(program.code, program.tests, program.language, {
    isolation: settings.testIsolation,
    values: settings.runtimeValues ? { calls: settings.traceCalls } : null,
  });
  const { assembled } = prepared;
  const sandbox = deps.getSandbox(settings.sandbox, settings.sandboxPoolSize);
  if (settings.allowHosts.length > 0 && !sandbox.egress) {
    return {
      lastRun: notRun(
        "NetworkUnavailable",
        `allowHosts names hosts, but the ${sandbox.kind} sandbox cannot give a program network (it has no \`egress\`); selfheal's own sandboxes can`,
      ),
    };
  }
  const liveTail: OutputLine[] = [];
  try {
    const { result, installed, notes } = await runWithPackages(
      sandbox,
      {
        language: program.language,
        code: prepared.code,
        ...(prepared.files ? { files: prepared.files } : {}),
        ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
        timeoutMs: settings.timeoutMs,
        // Per run: a run given more memory (or less) from its context gets it in any sandbox.
        limits: limitsFromSettings(settings),
        inputs: inputs.files,
        collectArtifacts: artifacts.request,
        ...(settings.allowHosts.length > 0 ? { allowHosts: settings.allowHosts } : {}),
      },
      {
        state: program,
        settings,
        attempt,
        hooks: {
          onOutput: (stream, printed) => {
            const line = stream === "stderr" ? withoutCompletionMark(printed) : printed;
            if (line === null || (stream === "stderr" && isValuesLine(line))) return;
            keepLast(liveTail, { stream, line: line.slice(0, LIVE_LINE_CHARS) }, LIVE_TAIL_LINES);
            const event: OutputEvent = { kind: "output", attempt, stream, line };
            runtime.writer?.(candidate === undefined ? event : { ...event, candidate });
          },
          // A cancelled run (Ctrl-C, an MCP client, a queue job) stops its program too.
          ...(runtime.signal ? { signal: runtime.signal } : {}),
        },
      },
    );
    const { result: ran, values } = takeRuntimeValues(result, prepared.valuesNonce);
    const settled = settleCompletion(ran, assembled);
    const collected = result.artifacts && !artifacts.keep ? { ...result.artifacts, folder: null } : result.artifacts;
    const lastRun: Execution = {
      ...settled,
      artifacts: collected,
      liveTail,
      ran: true,
      ...locateFailure(result.error?.line, assembled),
    };
    if (values) lastRun.values = values;
    if (prepared.isolation) lastRun.testIsolation = prepared.isolation;
    if (installed.length > 0) lastRun.installed = installed;
    if (settled.testsCompleted === false) lastRun.exitCalls = findExitCalls(program.code, program.language);
    return { lastRun, notes };
  } finally {
    if (!artifacts.keep) await rm(artifacts.request.into, { recursive: true, force: true });
  }
}

/**
 * Runs the program, then the acceptance tests, in the sandbox; every run counts as an attempt, even
 * one an objection kept from running. A rerun after installing an allowed package is not one.
 */
export function createExecutorNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const attempt = state.attempt + 1;
    const [objection] = objectionsFor(state, attempt);
    if (objection) return { attempt, lastRun: notRun(objection.type, objection.message) };
    return { attempt, ...(await executeProgram(deps, state, runtime, attempt)) };
  };
}
