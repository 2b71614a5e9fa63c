/**
 * A selfheal host in a process of its own, for tests that must kill the host or hand it inherited
 * descriptors: runs one program in the sandbox named by its last argument (JSON: kind, language,
 * code, timeoutMs; or the kind as the first argument; "bwrap-forked" forks the run from bwrap's fork server), reports each line the program prints on stderr as it comes, and the result as JSON
 * on stdout.
 */
import { createSandbox, type Language, type SandboxKind } from "../../src/sandbox/index.js";

// The request is the last argument; the kind is in it, or the first argument (the conformance suite's `owner`).
const args = process.argv.slice(2);
const request = JSON.parse(args.at(-1) ?? "{}") as {
  kind?: SandboxKind;
  language: Language;
  code: string;
  timeoutMs: number;
};
const { language, code, timeoutMs } = request;
const named = request.kind ?? args[0];
// "bwrap-forked": bwrap whose Python run is forked from its fork server, started before the run.
const forked = named === "bwrap-forked";
const kind = (forked ? "bwrap" : named) as SandboxKind;
const sandbox = createSandbox({ kind, prewarm: false });
// No languages: it waits for the fork server, which then forks the run on demand.
if (forked) await sandbox.prewarm([]);
const result = await sandbox.run(
  { language, code, timeoutMs },
  { onOutput: (_stream, line) => process.stderr.write(`${line}\n`) },
);
await sandbox.close();
process.stdout.write(JSON.stringify(result));
