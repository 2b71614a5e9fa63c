import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { Command, InvalidArgumentError, Option } from "commander";
import { z } from "zod";
import { SelfhealError } from "../errors.js";
import { createAgent } from "../graph/index.js";
import { formatIssues } from "../graph/context.js";
import { RunInputSchema, type RunInput } from "../graph/state.js";
import { describeLocation } from "../store.js";
import { hasModelConfig, MissingModelConfigError, modelRetriesFromEnv } from "../tools/models.js";
import { checkSandbox } from "../tools/sandbox/index.js";
import { canAskPerson, terminalApprover } from "./approval-prompt.js";
import { registerBenchCommand } from "./bench.js";
import { createDemoModel, DEMO_BANNER, DEMO_MODEL_NAME, DEMO_TASK } from "./demo.js";
import { registerDoctorCommand } from "./doctor.js";
import { formatCheckpoints, listCheckpoints } from "./history.js";
import { addOutputOptions, addSettingOptions, settingsWithFlags, type SettingFlags } from "./options.js";
import { ProgressReporter } from "./progress.js";
import { resumeRun, type ResumeFlags } from "./resume.js";
import { checkOutputFile, EXIT, streamRun } from "./run.js";
import { formatRuns, listRuns } from "./runs.js";
import { colorsFor, terminalStyle } from "./terminal.js";
import {
  abortOnCtrlC,
  addStoreOptions,
  noSuchRunError,
  describeModel,
  resumeCommandFor,
  threadExists,
  UsageError,
  withExistingStore,
  withStore,
  withThreadLease,
  withThreadStore,
  type StoreFlags,
} from "./session.js";

export { UsageError } from "./session.js";

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("expected a whole number of at least 1");
  return parsed;
}

function validateInput(input: unknown): RunInput {
  const result = RunInputSchema.safeParse(input);
  if (!result.success) throw new UsageError(formatIssues(result.error));
  return result.data;
}

interface RunFlags extends SettingFlags, StoreFlags {
  language: string;
  tests?: string;
  approve?: boolean;
  thread?: string;
  json?: boolean;
  out?: string;
}

/** The demo's scripted model and banner; a real run builds its model from the environment. */
interface ScriptedRun {
  model: BaseChatModel;
  banner: string;
}

/** `selfheal run` and `selfheal demo`: a new run in a new (or named) thread, checkpointed at every step. */
async function startRun(task: string, flags: RunFlags, scripted?: ScriptedRun): Promise<number> {
  const tests = flags.tests
    ? await readFile(flags.tests, "utf8").catch(() => {
        throw new UsageError(`--tests: cannot read ${flags.tests}`);
      })
    : undefined;
  const input = validateInput({ task, language: flags.language, tests });
  const settings = settingsWithFlags({ approval: Boolean(flags.approve), ...(scripted ? { model: DEMO_MODEL_NAME } : {}) }, flags);
  if (!scripted && !hasModelConfig()) throw new MissingModelConfigError();
  modelRetriesFromEnv();
  // Before the store opens and before any model call: these fail the same way at any moment.
  if (flags.out) checkOutputFile(flags.out);
  await checkSandbox({ kind: settings.sandbox });

  return withStore(flags, async (store) => {
    const threadId = flags.thread ?? randomUUID();
    if (await threadExists(store, threadId)) {
      throw new UsageError(`thread ${threadId} already has a run; continue it with \`${resumeCommandFor(threadId, flags)}\``);
    }
    return withThreadLease(store, threadId, async () => {
      await store.saveRun({ threadId, task: input.task, settings, createdAt: new Date().toISOString() });
      const reporter = new ProgressReporter();
      if (scripted) reporter.warn(scripted.banner);
      reporter.note(describeModel(settings, { scripted: Boolean(scripted) }));
      reporter.note(`thread ${threadId} (checkpoints in ${describeLocation(store.location)})`);
      const ctrlC = abortOnCtrlC();
      try {
        return await streamRun(createAgent({ model: scripted?.model, checkpointer: store.checkpointer }), input, settings, {
          json: flags.json,
          out: flags.out,
          threadId,
          resumeCommand: resumeCommandFor(threadId, flags),
          approve: canAskPerson() ? terminalApprover() : undefined,
          signal: ctrlC.signal,
        });
      } finally {
        ctrlC.dispose();
      }
    });
  });
}

/** The installed package's version; package.json sits two levels up from src/cli/ and from dist/cli/ alike. */
export function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return typeof manifest === "object" && manifest !== null && "version" in manifest ? String(manifest.version) : "unknown";
}

/**
 * A usage error is one line and a pointer to the help of the command it came from, not the
 * whole help: the message is what a person needs to read, and it would scroll away.
 */
function pointToHelp(command: Command, path: string): void {
  const red = colorsFor(terminalStyle(process.stderr)).red;
  command
    .showHelpAfterError(`(see \`${path} --help\`)`)
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error:/, red("error:"))) });
  for (const sub of command.commands) pointToHelp(sub, `${path} ${sub.name()}`);
}

export function buildProgram(): Command {
  const program = new Command("selfheal")
    .description("An LLM that writes a program, runs it in a sandbox, and repairs it from the real traceback.")
    .version(packageVersion(), "-V, --version", "print the version")
    .exitOverride();

  const run = program
    .command("run")
    .description("solve a task: generate, execute, judge and fix until it passes or a budget says stop; every step is checkpointed")
    .argument("<task>", "what the program must do")
    .addOption(new Option("-l, --language <language>", "language of the program").choices(["python", "javascript"]).default("python"))
    .option("-t, --tests <file>", "acceptance tests in the same language, run after the program");
  addOutputOptions(
    addSettingOptions(run)
      .option("--approve", "pause before each execution for a person to approve, reject or edit the program")
      .option("--thread <id>", "thread id for this run (default: a new random id)"),
  );
  addStoreOptions(run).action(async (task: string, flags: RunFlags) => {
    process.exitCode = await startRun(task, flags);
  });

  const resume = program
    .command("resume")
    .description("continue a stopped run from its last checkpoint, decide a pending approval, or fork from an earlier checkpoint")
    .argument("<thread>", "the thread id printed by `selfheal run`")
    .option("--approve", "approve the program waiting for approval")
    .option("--reject <reason>", "reject it; the reason reaches the fixer like an error")
    .option("--edit <file>", "run the program in this file instead")
    .option("--from <checkpoint>", "time travel: fork the run from this checkpoint (see `selfheal history`) into a new thread")
    .option("--thread <id>", "with --from: the new thread's id (default: a new random id)");
  addOutputOptions(addSettingOptions(resume));
  addStoreOptions(resume).action(async (threadId: string, flags: ResumeFlags) => {
    process.exitCode = await resumeRun(threadId, flags);
  });

  const history = program
    .command("history")
    .description("list a thread's checkpoints: step, the node that wrote it, attempt, status, checkpoint id")
    .argument("<thread>", "the thread id")
    .option("--json", "print JSON");
  addStoreOptions(history).action(async (threadId: string, flags: StoreFlags & { json?: boolean }) => {
    process.exitCode = await withThreadStore(flags, threadId, async (store) => {
      const rows = await listCheckpoints(createAgent({ checkpointer: store.checkpointer }), store.checkpointer, threadId);
      if (rows.length === 0) throw noSuchRunError(threadId, store.location);
      process.stdout.write(flags.json ? `${JSON.stringify(rows, null, 2)}\n` : formatCheckpoints(rows));
      return EXIT.passed;
    });
  });

  const runs = program
    .command("runs")
    .description("list the runs in the store: thread, status, attempts, tokens, last update, task")
    .option("--limit <n>", "show at most N runs, newest first", positiveInteger, 50)
    .option("--json", "print JSON");
  addStoreOptions(runs).action(async (flags: StoreFlags & { json?: boolean; limit: number }) => {
    process.exitCode = await withExistingStore(
      flags,
      async (store) => {
        const rows = await listRuns(store, createAgent({ checkpointer: store.checkpointer }), flags.limit);
        process.stdout.write(flags.json ? `${JSON.stringify(rows, null, 2)}\n` : formatRuns(rows));
        return EXIT.passed;
      },
      (location) => {
        process.stdout.write(flags.json ? "[]\n" : `no runs yet: there is no run store at ${describeLocation(location)}\n`);
        return EXIT.passed;
      },
    );
  });

  const demo = program
    .command("demo")
    .description("watch a scripted model write a buggy program, see it crash, and fix it (no API key needed)")
    .option("--json", "print a JSON result instead of the code")
    .addOption(new Option("--sandbox <kind>", "sandbox backend").choices(["auto", "bwrap", "process", "container"]));
  addStoreOptions(demo).action(async (flags: StoreFlags & Pick<RunFlags, "json" | "sandbox">) => {
    // Checkpointed like any run, so `selfheal runs` and `selfheal history` show the embedded store at work.
    process.exitCode = await startRun(DEMO_TASK, { ...flags, language: "python" }, { model: createDemoModel(), banner: DEMO_BANNER });
  });

  registerBenchCommand(program);
  registerDoctorCommand(program);
  pointToHelp(program, "selfheal");
  return program;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.passed;
  } catch (error) {
    if (error instanceof Error && "exitCode" in error && typeof error.exitCode === "number" && error.name === "CommanderError") {
      // commander already printed the message (or the help); --help and --version exit 0.
      return error.exitCode === 0 ? 0 : EXIT.usage;
    }
    // Every error selfheal raises on purpose is a usage or configuration problem the user can fix.
    if (error instanceof SelfhealError) {
      process.stderr.write(`selfheal: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof z.ZodError) {
      process.stderr.write(`selfheal: ${formatIssues(error)}\n`);
      return EXIT.usage;
    }
    throw error;
  }
}
