import type { Command } from "commander";
import { SUMMARIES } from "./summaries.js";

/**
 * Every command, in the order `selfheal --help` lists them: its name, operands and one line of
 * help, and how to load it. Only the command a person runs is loaded, so `--version`, `--help`
 * and a quick `runs` do not pay for the agent, the sandboxes or the queue.
 */
export interface CommandEntry {
  name: string;
  /** Operands as commander writes them, for the list in `selfheal --help`. */
  operands: string;
  summary: string;
  load: () => Promise<(program: Command) => void>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "run",
    operands: "<task>",
    summary: SUMMARIES.run,
    load: async () => (await import("./run-command.js")).registerRunCommand,
  },
  {
    name: "resume",
    operands: "<thread>",
    summary: SUMMARIES.resume,
    load: async () => (await import("./resume-command.js")).registerResumeCommand,
  },
  {
    name: "history",
    operands: "<thread>",
    summary: SUMMARIES.history,
    load: async () => (await import("./history-command.js")).registerHistoryCommand,
  },
  {
    name: "runs",
    operands: "",
    summary: SUMMARIES.runs,
    load: async () => (await import("./runs-command.js")).registerRunsCommand,
  },
  {
    name: "report",
    operands: "<thread>",
    summary: SUMMARIES.report,
    load: async () => (await import("./report-command.js")).registerReportCommand,
  },
  {
    name: "submit",
    operands: "[task]",
    summary: SUMMARIES.submit,
    load: async () => (await import("./submit-command.js")).registerSubmitCommand,
  },
  {
    name: "worker",
    operands: "",
    summary: SUMMARIES.worker,
    load: async () => (await import("./worker-command.js")).registerWorkerCommand,
  },
  {
    name: "cancel",
    operands: "<thread...>",
    summary: SUMMARIES.cancel,
    load: async () => (await import("./cancel-command.js")).registerCancelCommand,
  },
  {
    name: "demo",
    operands: "",
    summary: SUMMARIES.demo,
    load: async () => (await import("./demo.js")).registerDemoCommand,
  },
  {
    name: "bench",
    operands: "",
    summary: SUMMARIES.bench,
    load: async () => (await import("./bench-command.js")).registerBenchCommand,
  },
  {
    name: "doctor",
    operands: "",
    summary: SUMMARIES.doctor,
    load: async () => (await import("./doctor-command.js")).registerDoctorCommand,
  },
  {
    name: "mcp",
    operands: "",
    summary: SUMMARIES.mcp,
    load: async () => (await import("./mcp-command.js")).registerMcpCommand,
  },
];
