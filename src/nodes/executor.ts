import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Settings } from "../core/settings.js";
import { type Execution, objectionsFor } from "../core/state.js";
import type { ArtifactRequest } from "../sandbox/types.js";
import { assembleProgram, locateFailure } from "../tools/assemble.js";
import { loadInputs } from "../tools/inputs.js";
import type { AgentNode, AgentRuntime, NodeDeps } from "./types.js";

/** Custom stream event: one line the program printed, sent while it runs. */
export interface OutputEvent {
  kind: "output";
  attempt: number;
  stream: "stdout" | "stderr";
  line: string;
}

function notRun(type: string, message: string): Execution {
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
 * Where this attempt's artifacts go: `<artifactsDir>/<thread>/attempt-<n>`, emptied first (a
 * resumed run may execute an attempt again), or a temp dir that is removed once they are listed.
 */
async function artifactFolder(
  settings: Settings,
  runtime: AgentRuntime,
  attempt: number,
): Promise<{ request: ArtifactRequest; keep: boolean }> {
  const limits = { maxFiles: settings.maxArtifacts, maxBytes: settings.maxArtifactBytes };
  if (!settings.artifactsDir) {
    return { request: { into: await mkdtemp(join(tmpdir(), "selfheal-artifacts-")), ...limits }, keep: false };
  }
  const thread = runtime.configurable?.thread_id;
  const threadFolder = typeof thread === "string" && thread !== "" ? threadFolderName(thread) : `run-${randomUUID()}`;
  const into = join(settings.artifactsDir, threadFolder, `attempt-${attempt}`);
  await rm(into, { recursive: true, force: true });
  return { request: { into, ...limits }, keep: true };
}

/** Runs the program, then the acceptance tests, in the sandbox; every run counts as an attempt, even one an objection kept from running. */
export function createExecutorNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const attempt = state.attempt + 1;
    const [objection] = objectionsFor(state, attempt);
    if (objection) return { attempt, lastRun: notRun(objection.type, objection.message) };

    // Read again for every attempt: a file that went away since the generator looked fails this one.
    const inputs = await loadInputs(state.inputs, settings.maxInputBytes);
    if (!inputs.ok) return { attempt, lastRun: notRun("InputUnavailable", inputs.reason) };
    const artifacts = await artifactFolder(settings, runtime, attempt);
    const program = assembleProgram(state.code, state.tests, state.language);
    const sandbox = deps.getSandbox(settings.sandbox);
    try {
      const result = await sandbox.run(
        {
          language: state.language,
          code: program.source,
          timeoutMs: settings.timeoutMs,
          inputs: inputs.files,
          collectArtifacts: artifacts.request,
        },
        {
          onOutput: (stream, line) => runtime.writer?.({ kind: "output", attempt, stream, line } satisfies OutputEvent),
        },
      );
      const collected = result.artifacts && !artifacts.keep ? { ...result.artifacts, folder: null } : result.artifacts;
      return {
        attempt,
        lastRun: { ...result, artifacts: collected, ran: true, ...locateFailure(result.error?.line, program) },
      };
    } finally {
      if (!artifacts.keep) await rm(artifacts.request.into, { recursive: true, force: true });
    }
  };
}
