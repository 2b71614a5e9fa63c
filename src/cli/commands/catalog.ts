import type { Command } from "commander";

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
    summary:
      "solve a task: generate, execute, judge and fix until it passes or a budget says stop; every step is checkpointed",
    load: async () => (await import("./run-command.js")).registerRunCommand,
  },
  {
    name: "resume",
    operands: "<thread>",
    summary:
      "continue a stopped run from its last checkpoint, decide a pending approval, or fork from an earlier checkpoint",
    load: async () => (await import("./resume-command.js")).registerResumeCommand,
  },
  {
    name: "history",
    operands: "<thread>",
    summary: "list a thread's checkpoints: step, the node that wrote it, attempt, status, checkpoint id",
    load: async () => (await import("./history-command.js")).registerHistoryCommand,
  },
  {
    name: "runs",
    operands: "",
    summary: "list the runs in the store: thread, status, attempts, tokens, last update, task",
    load: async () => (await import("./runs-command.js")).registerRunsCommand,
  },
  {
    name: "report",
    operands: "<thread>",
    summary:
      "write a self-contained HTML report of a finished or paused run: every attempt, its diff, output and tokens",
    load: async () => (await import("./report-command.js")).registerReportCommand,
  },
  {
    name: "submit",
    operands: "[task]",
    summary: "enqueue runs for `selfheal worker`s on any machine; prints one thread id per run",
    load: async () => (await import("./submit-command.js")).registerSubmitCommand,
  },
  {
    name: "worker",
    operands: "",
    summary: "take runs from the queue (`selfheal submit`) and run them, on this machine or any other",
    load: async () => (await import("./worker-command.js")).registerWorkerCommand,
  },
  {
    name: "cancel",
    operands: "<thread...>",
    summary: "cancel runs given to the queue (selfheal submit); a running one stops at once, its checkpoints kept",
    load: async () => (await import("./cancel-command.js")).registerCancelCommand,
  },
  {
    name: "demo",
    operands: "",
    summary: "watch a scripted model write a buggy program, see it crash, and fix it (no API key needed)",
    load: async () => (await import("./demo.js")).registerDemoCommand,
  },
  {
    name: "bench",
    operands: "",
    summary: "benchmark the agent on HumanEval-format tasks with hidden tests, or verify the dataset's judge",
    load: async () => (await import("./bench-command.js")).registerBenchCommand,
  },
  {
    name: "doctor",
    operands: "",
    summary:
      "say which sandbox would run code here and which of its limits hold, which Pythons there are, and which model server runs would call",
    load: async () => (await import("./doctor-command.js")).registerDoctorCommand,
  },
  {
    name: "mcp",
    operands: "",
    summary: "serve the agent to MCP clients (Claude Desktop, Cursor, VS Code): over stdio, or --http",
    load: async () => {
      const [{ registerMcpCommand }, { packageVersion }] = await Promise.all([
        import("./mcp-command.js"),
        import("../main.js"),
      ]);
      return (program) => registerMcpCommand(program, packageVersion());
    },
  },
];

/** The one line of help of a command, shared by its own definition and the list in `selfheal --help`. */
export function summaryOf(name: string): string {
  const entry = COMMANDS.find((command) => command.name === name);
  if (!entry) throw new Error(`no command ${name} in the catalog`);
  return entry.summary;
}
