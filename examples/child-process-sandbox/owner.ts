/**
 * The example backend hosted in a process of its own, for the conformance suite's owner-death
 * case: runs the one program its last argument names (JSON: language, code, timeoutMs) and writes
 * each line the program prints to stderr as it comes.
 */
import type { Language } from "../../src/index.js";
import { ChildProcessSandbox } from "./index.js";

const { language, code, timeoutMs } = JSON.parse(process.argv.at(-1) ?? "{}") as {
  language: Language;
  code: string;
  timeoutMs: number;
};
const sandbox = new ChildProcessSandbox();
await sandbox.run({ language, code, timeoutMs }, { onOutput: (_stream, line) => process.stderr.write(`${line}\n`) });
await sandbox.close();
