import { randomUUID } from "node:crypto";
import { basename, resolve } from "node:path";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import {
  checkNewRun,
  createAgent,
  type InputSource,
  type Language,
  modelRetriesFromEnv,
  type RunInput,
} from "../../internal.js";
import { artifactsFolder, describeLocation } from "../../store/index.js";
import { canAskPerson, terminalApprover } from "../approval-prompt.js";
import { DEMO_MODEL_NAME } from "../demo-model.js";
import { allowHostsFromFlags, packagesFromFlags, settingsWithFlags } from "../flag-settings.js";
import { type ModelCallFlags, modelCallsFromFlags, readFlagFile, type SettingFlags } from "../options.js";
import { ProgressReporter } from "../progress.js";
import { choosePython, modulesSuggested } from "../python-choice.js";
import { describeModelSource, describeSandboxChoice } from "../run-lines.js";
import {
  abortOnCtrlC,
  resumeCommandFor,
  type StoreFlags,
  threadExists,
  UsageError,
  withStore,
  withThreadLease,
} from "../session.js";
import { checkArtifactsDir, checkOutputFile, streamRun } from "../stream-run.js";
import { reportAtEnd } from "./report.js";

export interface RunFlags extends SettingFlags, StoreFlags, ModelCallFlags {
  language: string;
  tests?: string;
  approve?: boolean;
  thread?: string;
  json?: boolean;
  out?: string;
  /** Where to write the run's HTML report once it stops. */
  report?: string;
  allowPackage?: string[];
  /** `--allow-host`: the `allowHosts` setting. */
  allowHost?: string[];
  /** Input files, each put into the work dir under its base name. */
  input?: string[];
  /** Artifacts the task must produce, e.g. out/chart.png. */
  expect?: string[];
  /** Folder to copy the kept artifacts into when the run ends. */
  artifacts?: string;
}

/** `--input a/sales.csv` becomes `sales.csv` in the work dir; two files of one name would clash. */
export function inputsFromFiles(files: string[] = []): Record<string, InputSource> {
  const inputs: Record<string, InputSource> = {};
  for (const file of files) {
    const name = basename(file);
    if (name in inputs) throw new UsageError(`--input: two files are named ${name}; rename one`);
    inputs[name] = { path: resolve(file) };
  }
  return inputs;
}

/** The demo's scripted model and banner; a real run builds its model from the environment. */
export interface ScriptedRun {
  model: BaseChatModel;
  banner: string;
  /** Input fields the scripted task brings along, e.g. the data demo's sales.csv. */
  input?: Partial<RunInput>;
}

/** `selfheal run` and `selfheal demo`: a new run in a new (or named) thread, checkpointed at every step. */
export async function startRun(task: string, flags: RunFlags, scripted?: ScriptedRun): Promise<number> {
  // Before the store opens and before any model call: these fail the same way at any moment.
  if (flags.artifacts) checkArtifactsDir(flags.artifacts);
  if (flags.out) checkOutputFile(flags.out);
  if (flags.report) checkOutputFile(flags.report, "--report");
  // A replay answers from its folder: no model is built.
  const modelCalls = modelCallsFromFlags(flags);
  modelRetriesFromEnv();
  const tests = flags.tests ? await readFlagFile("--tests", flags.tests) : undefined;
  const given = {
    task,
    language: flags.language,
    tests,
    inputs: inputsFromFiles(flags.input),
    ...(flags.expect ? { expect: flags.expect } : {}),
    ...scripted?.input,
  };
  const flagged = settingsWithFlags(
    {
      approval: Boolean(flags.approve),
      packages: packagesFromFlags(flags.allowPackage, given.language as Language),
      ...(flags.allowHost ? { allowHosts: allowHostsFromFlags(flags.allowHost) } : {}),
      ...(scripted ? { model: DEMO_MODEL_NAME } : {}),
    },
    flags,
  );
  // A missing or oversized input, no model, or no sandbox is a usage error now, not a failed run after a model call.
  const { input } = await checkNewRun(given, flagged, {
    model: scripted || flags.replay ? "own" : "environment",
    inputLabel: "--input",
  });
  // Which Python runs the programs is settled (and stored) before the run, so resume keeps it;
  // after the checks above, which are cheaper than asking a Python what it can import. A container
  // runs its image's own Python.
  const python =
    input.language === "python" && flagged.sandbox !== "container"
      ? await choosePython(flagged, modulesSuggested(input))
      : undefined;
  if (python?.broken) throw new UsageError(python.broken);
  const settings = python ? { ...flagged, python: python.python } : flagged;

  return withStore(flags, async (store) => {
    const threadId = flags.thread ?? randomUUID();
    if (await threadExists(store, threadId)) {
      throw new UsageError(
        `thread ${threadId} already has a run; continue it with \`${resumeCommandFor(threadId, flags)}\``,
      );
    }
    return withThreadLease(store, threadId, async () => {
      // Resume and fork read the stored settings, so they keep their artifacts in the same place.
      const stored = { ...settings, artifactsDir: settings.artifactsDir ?? artifactsFolder(store.location) };
      await store.saveRun({ threadId, task: input.task, settings: stored, createdAt: new Date().toISOString() });
      const reporter = new ProgressReporter();
      if (scripted) reporter.warn(scripted.banner);
      for (const line of describeModelSource(settings, flags, { scripted: Boolean(scripted) })) reporter.note(line);
      reporter.note(`thread ${threadId} (checkpoints in ${describeLocation(store.location)})`);
      if (python) reporter.note(python.note);
      reporter.note(await describeSandboxChoice(settings.sandbox));
      if (python?.warning) reporter.warn(python.warning);
      const ctrlC = abortOnCtrlC();
      try {
        const exitCode = await streamRun(
          createAgent({
            model: scripted?.model,
            checkpointer: store.checkpointer,
            modelCalls,
          }),
          input,
          stored,
          {
            json: flags.json,
            out: flags.out,
            artifactsTo: flags.artifacts,
            threadId,
            resumeCommand: resumeCommandFor(threadId, flags),
            replayedFrom: flags.replay,
            approve: canAskPerson() ? terminalApprover() : undefined,
            signal: ctrlC.signal,
            watchStore: store.onWait,
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
