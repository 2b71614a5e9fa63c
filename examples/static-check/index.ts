import type { Finding, Verifier } from "../../src/index.js";
import { CHECKER_SOURCE } from "./checker.js";

export interface StaticCheckPolicy {
  /** Top-level modules the program may import. */
  allowedImports: string[];
  /** Function names the program may not call, e.g. eval and exec. */
  bannedCalls: string[];
}

export const DEFAULT_POLICY: StaticCheckPolicy = {
  allowedImports: [
    "math",
    "re",
    "collections",
    "itertools",
    "functools",
    "statistics",
    "string",
    "typing",
    "dataclasses",
    "heapq",
    "bisect",
  ],
  bannedCalls: ["eval", "exec", "compile", "__import__", "open", "system", "popen"],
};

interface CheckerFinding {
  type: string;
  line: number | null;
  message: string;
}

/**
 * A `before` verifier for Python: compiles the program and walks its AST for disallowed imports
 * and calls, inside the sandbox, and fails the attempt before anything runs.
 */
export function staticCheck(policy: StaticCheckPolicy = DEFAULT_POLICY): Verifier {
  return {
    name: "staticCheck",
    stage: "before",
    async check(state, { settings, deps }): Promise<Finding | null> {
      if (state.language !== "python" || !state.code.trim()) return null;
      const run = await deps.getSandbox(settings.sandbox).run({
        language: "python",
        code: CHECKER_SOURCE,
        files: { "candidate.py": state.code, "policy.json": JSON.stringify(policy) },
        timeoutMs: 5000,
      });
      if (run.status !== "ok")
        return { type: "StaticCheckFailed", message: `the checker itself failed: ${run.error?.message ?? run.status}` };
      const findings = JSON.parse(run.stdout) as CheckerFinding[];
      if (findings.length === 0) return null;
      return {
        type: findings[0]!.type,
        message: findings.map((finding) => `line ${finding.line ?? "?"}: ${finding.message}`).join("; "),
      };
    },
  };
}
