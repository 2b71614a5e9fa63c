/**
 * A selfheal host in a process of its own, for tests that must kill the host or hand it inherited
 * descriptors: runs one program in the sandbox named by argv[2] (JSON: kind, language, code,
 * timeoutMs), reports each line the program prints on stderr as it comes, and the result as JSON
 * on stdout.
 */
import { createSandbox, type Language, type SandboxKind } from "../src/sandbox/index.js";

const { kind, language, code, timeoutMs } = JSON.parse(process.argv[2] ?? "{}") as {
  kind: SandboxKind;
  language: Language;
  code: string;
  timeoutMs: number;
};
const sandbox = createSandbox({ kind, prewarm: false });
const result = await sandbox.run(
  { language, code, timeoutMs },
  { onOutput: (_stream, line) => process.stderr.write(`${line}\n`) },
);
await sandbox.close();
process.stdout.write(JSON.stringify(result));
