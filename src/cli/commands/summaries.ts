// One line of help per command, for its own definition and for the list in `selfheal --help`:
// apart from the catalog, which loads the commands, so a command can name its line without a cycle.

export const SUMMARIES = {
  run: "solve a task: generate, execute, judge and fix until it passes or a budget says stop; every step is checkpointed",
  resume:
    "continue a stopped run from its last checkpoint, decide a pending approval, or fork from an earlier checkpoint",
  history: "list a thread's checkpoints: step, the node that wrote it, attempt, status, checkpoint id",
  runs: "list the runs in the store: thread, status, attempts, tokens, last update, task",
  report: "write a self-contained HTML report of a finished or paused run: every attempt, its diff, output and tokens",
  submit: "enqueue runs for `selfheal worker`s on any machine; prints one thread id per run",
  worker: "take runs from the queue (`selfheal submit`) and run them, on this machine or any other",
  cancel: "cancel runs given to the queue (selfheal submit); a running one stops at once, its checkpoints kept",
  demo: "watch a scripted model write a buggy program, see it crash, and fix it (no API key needed)",
  bench: "benchmark the agent on HumanEval-format tasks with hidden tests, or verify the dataset's judge",
  doctor:
    "say which sandbox would run code here and which of its limits hold, which Pythons there are, and which model server runs would call",
  mcp: "serve the agent to MCP clients (Claude Desktop, Cursor, VS Code): over stdio, or --http",
} as const;

export type CommandName = keyof typeof SUMMARIES;
