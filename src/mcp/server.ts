import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  ApprovalDecisionSchema,
  formatIssues,
  type KeptArtifacts,
  LIVE_LINE_CHARS,
  RunInputSchema,
  SETTING_TABLE,
  SettingsSchema,
  type SettingTable,
  UsageError,
} from "../internal.js";
import { didYouMean } from "../names.js";
import {
  ClientSettingsSchema,
  clientSettingsSchemaOf,
  type McpRuns,
  type RunListener,
  type RunOutcome,
} from "./runs.js";

/** Files bigger than this come back as a link to the file, not as its bytes. */
export const MAX_INLINE_ARTIFACT_BYTES = 4 * 1024 * 1024;

/**
 * Lines of one attempt's output sent as log messages, each cut to LIVE_LINE_CHARS: a program that
 * prints a million lines must not send the client a million notifications. The rest are counted
 * in one message when the attempt ends; the result's history and `run_history` tell the outcome.
 */
export const MAX_LIVE_LINES_PER_ATTEMPT = 200;

type Content = CallToolResult["content"][number];

/** What a tool handler gets from the SDK that the run needs: the client's signal, its progress token, a way to notify it. */
interface CallContext {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (notification: ServerNotification) => Promise<void>;
}

/**
 * Each attempt's end as a progress notification (when the client asked for progress) and a log
 * message; each line the program prints as a log message, as it prints it. Notifications go out
 * on the call's own stream, so two clients each hear only their own runs.
 */
function listenerFor(call: CallContext): RunListener {
  const token = call._meta?.progressToken;
  const send = (notification: ServerNotification) => call.sendNotification(notification).catch(() => undefined);
  const linesSent = new Map<number, number>();
  return {
    async attemptEnded({ attempt, maxAttempts, passed, summary }) {
      const withheld = (linesSent.get(attempt) ?? 0) - MAX_LIVE_LINES_PER_ATTEMPT;
      if (withheld > 0) {
        await send({
          method: "notifications/message",
          params: {
            level: "info",
            logger: "selfheal.output",
            data: `attempt ${attempt}: ${withheld} more line(s) of output not sent`,
          },
        });
      }
      const message = `attempt ${attempt}: ${passed ? "passed" : summary}`;
      if (token !== undefined) {
        await send({
          method: "notifications/progress",
          params: { progressToken: token, progress: attempt, total: maxAttempts, message },
        });
      }
      await send({ method: "notifications/message", params: { level: "info", logger: "selfheal", data: message } });
    },
    async storeWait(line) {
      await send({ method: "notifications/message", params: { level: "warning", logger: "selfheal", data: line } });
    },
    async output({ attempt, stream, line }) {
      const sent = (linesSent.get(attempt) ?? 0) + 1;
      linesSent.set(attempt, sent);
      if (sent > MAX_LIVE_LINES_PER_ATTEMPT) return;
      await send({
        method: "notifications/message",
        params: {
          level: "info",
          logger: "selfheal.output",
          data: { attempt, stream, line: line.slice(0, LIVE_LINE_CHARS) },
        },
      });
    },
  };
}

/** A chart the program drew comes back as an image; any other file as an embedded resource. */
async function artifactContents(kept: KeptArtifacts | undefined): Promise<Content[]> {
  if (!kept?.folder) return [];
  const contents: Content[] = [];
  for (const file of kept.files) {
    const path = join(kept.folder, file.name);
    const uri = pathToFileURL(path).href;
    if (file.bytes > MAX_INLINE_ARTIFACT_BYTES) {
      contents.push({ type: "resource_link", uri, name: file.name, mimeType: file.mediaType, size: file.bytes });
      continue;
    }
    const bytes = await readFile(path);
    if (file.mediaType.startsWith("image/")) {
      contents.push({ type: "image", data: bytes.toString("base64"), mimeType: file.mediaType });
    } else if (file.mediaType.startsWith("text/") || file.mediaType === "application/json") {
      contents.push({ type: "resource", resource: { uri, mimeType: file.mediaType, text: bytes.toString("utf8") } });
    } else {
      contents.push({ type: "resource", resource: { uri, mimeType: file.mediaType, blob: bytes.toString("base64") } });
    }
  }
  return contents;
}

/** A run's result: a line for people, the fields for programs, the program, and the artifacts. */
async function runResult(outcome: RunOutcome): Promise<CallToolResult> {
  const { state } = outcome;
  const code = outcome.awaiting?.code ?? (state.status === "passed" ? state.code : (state.best?.code ?? state.code));
  const summary = {
    threadId: outcome.threadId,
    status: outcome.status,
    reason: state.reason ?? null,
    attempts: state.attempt,
    tokens: state.usage.totalTokens,
    code,
    history: state.history,
    artifacts: state.artifacts?.files.map(({ name, bytes, mediaType }) => ({ name, bytes, mediaType })) ?? [],
    ...(outcome.awaiting ? { awaitingApproval: outcome.awaiting } : {}),
  };
  const headline =
    outcome.status === "awaiting_approval"
      ? `Attempt ${outcome.awaiting?.attempt} is waiting for approval in thread ${outcome.threadId}: call resume with a decision.`
      : `${outcome.status} after ${state.attempt} attempt(s), ${state.usage.totalTokens} tokens (thread ${outcome.threadId})${state.reason ? `: ${state.reason}` : ""}`;
  return {
    content: [
      { type: "text", text: `${headline}\n\n\`\`\`${state.language}\n${code}\n\`\`\`` },
      ...(await artifactContents(state.artifacts)),
    ],
    structuredContent: summary,
    isError: false,
  };
}

/** A failure the caller can fix, as the tool's answer rather than a protocol error: the client shows it to the model. */
function toolError(error: unknown): CallToolResult {
  const message =
    error instanceof z.ZodError ? formatIssues(error) : error instanceof Error ? error.message : String(error);
  return { content: [{ type: "text", text: message }], isError: true };
}

async function answer(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return toolError(error);
  }
}

/**
 * The `solve` and `resume` tools' arguments: the run's input as `invoke` validates it, and the
 * settings a client may give, loose where the SDK checks them so an unknown key reaches the tool,
 * which refuses it by name (refuseUnknownArguments): a setting given beside the task, `maxAttempts`,
 * ran with the default before, silently.
 */
function runToolSchemas<S extends z.ZodObject>(clientSettings: S) {
  const settings = clientSettings.loose();
  return {
    clientSettings,
    solve: RunInputSchema.extend({
      threadId: z.string().min(1).optional().describe("Thread id for the run (default: a new random id)"),
      settings: settings.optional().describe("Run settings; each one left out keeps its default"),
    }).loose(),
    resume: z
      .object({
        threadId: z.string().min(1).describe("The thread of the run to continue"),
        decision: ApprovalDecisionSchema.optional().describe("For a run waiting for approval: approve, reject or edit"),
        settings: settings.optional().describe("Settings to change for the rest of the run"),
      })
      .loose(),
  };
}

/** The tools' schemas for the real setting table, built once for every connection of the server. */
const DEFAULT_RUN_TOOLS = runToolSchemas(ClientSettingsSchema);

const ListRunsInputSchema = z
  .object({ limit: z.number().int().min(1).max(500).default(20).describe("How many runs, at most") })
  .loose();

const RunHistoryInputSchema = z.object({ threadId: z.string().min(1).describe("The run's thread id") }).loose();

/** Throws a UsageError naming each key of `given` not in `known`, with the known one it was probably meant to be. */
function refuseUnknownKeys(given: object, known: string[], describe: (key: string, hint: string) => string): void {
  const unknown = Object.keys(given).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new UsageError(unknown.map((key) => describe(key, didYouMean(key, known))).join("; "));
}

/**
 * A setting no client may give, refused by name as parseSettings refuses one; a server-only one
 * (setting table `serverOnly`) says it is the server's.
 */
function refuseUnknownSettings(settings: unknown, clientSettings: z.ZodObject): void {
  if (typeof settings !== "object" || settings === null) return;
  const known = Object.keys(clientSettings.shape);
  const serverOnly = Object.keys(settings).filter((key) => !known.includes(key) && key in SettingsSchema.shape);
  if (serverOnly.length > 0)
    throw new UsageError(`${serverOnly.join(", ")}: set by the server, not by a client (selfheal mcp's own settings)`);
  refuseUnknownKeys(settings, known, (key, hint) => `unknown setting "${key}"${hint}`);
}

/**
 * The SDK checks a tool's arguments against its schema and drops a key the schema lacks; every
 * schema here is loose, so such a key reaches the tool, which refuses it by name with the one it
 * was probably meant to be, as the CLI and Studio do. Its settings are checked the same way.
 */
function refuseUnknownArguments(
  tool: string,
  args: Record<string, unknown>,
  schema: z.ZodObject,
  clientSettings?: z.ZodObject,
): void {
  const known = Object.keys(schema.shape);
  refuseUnknownKeys(
    args,
    known,
    (key, hint) => `${tool} has no argument "${key}"${hint} (it takes ${known.join(", ")})`,
  );
  if (clientSettings) refuseUnknownSettings(args.settings, clientSettings);
}

/**
 * An MCP server offering selfheal's runs as tools; one per client connection, all sharing `runs`.
 * `settings`: the setting table its tools offer (a test gives a copy with a setting added).
 */
export function createMcpServer(
  runs: McpRuns,
  info: { version: string },
  settings: SettingTable = SETTING_TABLE,
): McpServer {
  const tools = settings === SETTING_TABLE ? DEFAULT_RUN_TOOLS : runToolSchemas(clientSettingsSchemaOf(settings));
  const server = new McpServer(
    { name: "selfheal", version: info.version },
    {
      capabilities: { logging: {} },
      instructions:
        "selfheal writes a program for a task, runs it in a sandbox, and repairs it from the real error until it passes. " +
        "Use solve for a new task, list_runs and run_history to look at runs, resume to continue a stopped one.",
    },
  );

  server.registerTool(
    "solve",
    {
      title: "Solve a programming task",
      description:
        "Write a program for the task, run it in a sandbox, and fix it from the real error until it passes (or a limit says stop). " +
        "Returns the status, the final program, each attempt, the tokens spent, and the files it wrote under out/. " +
        "Each attempt is reported as progress, each line the program prints as a log message.",
      inputSchema: tools.solve,
    },
    (args, call) =>
      answer(async () => {
        // Its input's own fields are checked as invoke checks them: an unknown one there is refused by checkRunInput.
        const { threadId, settings, ...input } = args;
        refuseUnknownSettings(settings, tools.clientSettings);
        return runResult(await runs.solve({ input, settings, threadId }, listenerFor(call), call.signal));
      }),
  );

  server.registerTool(
    "resume",
    {
      title: "Continue a stopped run",
      description:
        "Continue a run that was cancelled, stopped on a model error, or is waiting for approval (give a decision then).",
      inputSchema: tools.resume,
    },
    (args, call) =>
      answer(async () => {
        refuseUnknownArguments("resume", args, tools.resume, tools.clientSettings);
        return runResult(await runs.resume(args, listenerFor(call), call.signal));
      }),
  );

  server.registerTool(
    "list_runs",
    {
      title: "List runs",
      description: "The runs in selfheal's store, newest first: thread, task, status, attempts, tokens.",
      inputSchema: ListRunsInputSchema,
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        refuseUnknownArguments("list_runs", args, ListRunsInputSchema);
        const rows = await runs.list(args.limit);
        const text = rows.length
          ? rows.map((row) => `${row.threadId}  ${row.status}  ${row.attempts} attempt(s)  ${row.task}`).join("\n")
          : "no runs yet";
        return { content: [{ type: "text", text }], structuredContent: { runs: rows } };
      }),
  );

  server.registerTool(
    "run_history",
    {
      title: "A run's history",
      description:
        "One run: its status, each attempt and what failed it, its distinct errors, tokens, and its program.",
      inputSchema: RunHistoryInputSchema,
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(async () => {
        refuseUnknownArguments("run_history", args, RunHistoryInputSchema);
        const { threadId } = args;
        const history = await runs.history(threadId);
        const lines = history.attempts.map(
          (entry) => `attempt ${entry.attempt} (${entry.node}): ${entry.outcome}, ${entry.tokens} tokens`,
        );
        return {
          content: [{ type: "text", text: [`${threadId}: ${history.status}`, ...lines].join("\n") }],
          structuredContent: history,
        };
      }),
  );

  return server;
}
