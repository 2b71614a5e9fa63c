import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { type Command, Option } from "commander";
import {
  checkSandbox,
  createAgent,
  formatIssues,
  hasModelConfig,
  LANGUAGES,
  MissingModelConfigError,
  modelRetriesFromEnv,
  RunInputSchema,
} from "../../index.js";
import { describeLocation } from "../../store/index.js";
import { canAskPerson, terminalApprover } from "../approval-prompt.js";
import { DEMO_MODEL_NAME } from "../demo-model.js";
import {
  addOutputOptions,
  addReportOption,
  addSettingOptions,
  packagesFromFlags,
  type SettingFlags,
  settingsWithFlags,
} from "../options.js";
import { ProgressReporter } from "../progress.js";
import {
  abortOnCtrlC,
  addStoreOptions,
  describeModel,
  resumeCommandFor,
  type StoreFlags,
  threadExists,
  UsageError,
  withStore,
  withThreadLease,
} from "../session.js";
import { checkOutputFile, streamRun } from "../stream-run.js";
import { reportAtEnd } from "./report.js";

/** The input with its defaults filled in (the language, for one). */
function validateInput(input: unknown): ReturnType<typeof RunInputSchema.parse> {
  const result = RunInputSchema.safeParse(input);
  if (!result.success) throw new UsageError(formatIssues(result.error));
  return result.data;
}

export interface RunFlags extends SettingFlags, StoreFlags {
  language: string;
  tests?: string;
  approve?: boolean;
  thread?: string;
  json?: boolean;
  out?: string;
  /** Where to write the run's HTML report once it stops. */
  report?: string;
  allowPackage?: string[];
}

/** The demo's scripted model and banner; a real run builds its model from the environment. */
export interface ScriptedRun {
  model: BaseChatModel;
  banner: string;
}

/** `selfheal run` and `selfheal demo`: a new run in a new (or named) thread, checkpointed at every step. */
export async function startRun(task: string, flags: RunFlags, scripted?: ScriptedRun): Promise<number> {
  const tests = flags.tests
    ? await readFile(flags.tests, "utf8").catch(() => {
        throw new UsageError(`--tests: cannot read ${flags.tests}`);
      })
    : undefined;
  const input = validateInput({ task, language: flags.language, tests });
  const settings = settingsWithFlags(
    {
      approval: Boolean(flags.approve),
      packages: packagesFromFlags(flags.allowPackage, input.language),
      ...(scripted ? { model: DEMO_MODEL_NAME } : {}),
    },
    flags,
  );
  if (!scripted && !hasModelConfig()) throw new MissingModelConfigError();
  modelRetriesFromEnv();
  // Before the store opens and before any model call: these fail the same way at any moment.
  if (flags.out) checkOutputFile(flags.out);
  if (flags.report) checkOutputFile(flags.report, "--report");
  await checkSandbox({ kind: settings.sandbox });

  return withStore(flags, async (store) => {
    const threadId = flags.thread ?? randomUUID();
    if (await threadExists(store, threadId)) {
      throw new UsageError(
        `thread ${threadId} already has a run; continue it with \`${resumeCommandFor(threadId, flags)}\``,
      );
    }
    return withThreadLease(store, threadId, async () => {
      await store.saveRun({ threadId, task: input.task, settings, createdAt: new Date().toISOString() });
      const reporter = new ProgressReporter();
      if (scripted) reporter.warn(scripted.banner);
      reporter.note(describeModel(settings, { scripted: Boolean(scripted) }));
      reporter.note(`thread ${threadId} (checkpoints in ${describeLocation(store.location)})`);
      const ctrlC = abortOnCtrlC();
      try {
        const exitCode = await streamRun(
          createAgent({ model: scripted?.model, checkpointer: store.checkpointer }),
          input,
          settings,
          {
            json: flags.json,
            out: flags.out,
            threadId,
            resumeCommand: resumeCommandFor(threadId, flags),
            approve: canAskPerson() ? terminalApprover() : undefined,
            signal: ctrlC.signal,
          },
        );
        if (flags.report) await reportAtEnd(store, threadId, flags.report);
        return exitCode;
      } finally {
        ctrlC.dispose();
      }
    });
  });
}

/** `selfheal run <task>`. */
export function registerRunCommand(program: Command): void {
  const command = program
    .command("run")
    .description(
      "solve a task: generate, execute, judge and fix until it passes or a budget says stop; every step is checkpointed",
    )
    .argument("<task>", "what the program must do")
    .addOption(new Option("-l, --language <language>", "language of the program").choices(LANGUAGES).default("python"))
    .option("-t, --tests <file>", "acceptance tests in the same language, run after the program")
    .option(
      "--allow-package <spec...>",
      "packages the program may import, installed on first need: NAME[@version] for the run's language, or python:NAME / javascript:NAME",
    );
  addOutputOptions(
    addSettingOptions(command)
      .option("--approve", "pause before each execution for a person to approve, reject or edit the program")
      .option("--thread <id>", "thread id for this run (default: a new random id)"),
  );
  addStoreOptions(addReportOption(command)).action(async (task: string, flags: RunFlags) => {
    process.exitCode = await startRun(task, flags);
  });
}
