import type { Sandbox } from "../internal.js";
import { buildProbeProgram, type ProbeVerdict, parseProbeOutput } from "./behaviour-probe.js";
import type { BenchmarkTask } from "./dataset.js";
import {
  applyEdits,
  type Edit,
  MUTATION_OPERATORS,
  MUTATORS_BY_KIND,
  type MutationOperator,
  type MutationSite,
} from "./mutators.js";
import { type PythonToken, significantTokens, tokenizePython } from "./python-tokens.js";

// Which mutants a task gets: every candidate the operators (mutators.ts) find, the ones that
// change behaviour on the hidden tests' calls (found by running them in the sandbox), and the few kept.

export interface MutantCandidate {
  /** Stable id within a task: `<operator>@<line>:<n>`. */
  id: string;
  operator: MutationOperator;
  /** 1-based line in `canonical_solution`. */
  line: number;
  /** Human-readable edit, e.g. `line 3: "<" -> "<="`. */
  description: string;
  /** The whole mutated solution body. */
  solution: string;
}

export interface EffectiveMutant extends MutantCandidate {
  /** How it differs from the reference on the hidden tests' own calls. */
  difference: Exclude<ProbeVerdict["difference"], null>;
  /** First observed difference, for the report. */
  detail: string;
}

interface FoundMutation {
  operator: MutationOperator;
  line: number;
  description: string;
  edits: Edit[];
}

/**
 * Every single-edit mutant of `solution`, in source order per operator. Pure text work: it does
 * not know yet whether a mutant compiles or changes behaviour; `findEffectiveMutants` runs them.
 */
export function generateMutantCandidates(solution: string): MutantCandidate[] {
  let tokens: PythonToken[];
  try {
    tokens = significantTokens(tokenizePython(solution));
  } catch {
    // A solution our tokenizer cannot read gets no mutants; the verify report names the task.
    return [];
  }
  const found: FoundMutation[] = [];
  tokens.forEach((token, index) => {
    const add = (operator: MutationOperator, description: string, edits: Edit[]): void => {
      found.push({ operator, line: token.line, description: `line ${token.line}: ${description}`, edits });
    };
    const site: MutationSite = {
      solution,
      tokens,
      index,
      token,
      previous: tokens[index - 1],
      next: tokens[index + 1],
      add,
    };
    for (const mutate of MUTATORS_BY_KIND[token.kind] ?? []) mutate(site);
  });
  return distinctCandidates(solution, found);
}

/** Applies each mutation, drops the ones that give a program already seen, and names the rest. */
function distinctCandidates(solution: string, found: FoundMutation[]): MutantCandidate[] {
  const counters = new Map<string, number>();
  const seenSolutions = new Set<string>([solution]);
  const candidates: MutantCandidate[] = [];
  for (const mutation of found) {
    const mutated = applyEdits(solution, mutation.edits);
    if (seenSolutions.has(mutated)) continue;
    seenSolutions.add(mutated);
    const key = `${mutation.operator}@${mutation.line}`;
    const ordinal = (counters.get(key) ?? 0) + 1;
    counters.set(key, ordinal);
    candidates.push({
      id: `${key}:${ordinal}`,
      operator: mutation.operator,
      line: mutation.line,
      description: mutation.description,
      solution: mutated,
    });
  }
  return candidates;
}

/**
 * Takes items round-robin across operators (in `MUTATION_OPERATORS` order), so a capped
 * selection covers many kinds of bug instead of every `<` in a long function.
 */
export function interleaveByOperator<T extends { operator: MutationOperator }>(items: readonly T[]): T[] {
  const queues = MUTATION_OPERATORS.map((operator) => items.filter((item) => item.operator === operator));
  const result: T[] = [];
  for (let round = 0; result.length < items.length; round += 1) {
    for (const queue of queues) {
      const item = queue[round];
      if (item !== undefined) result.push(item);
    }
  }
  return result;
}

export interface FindMutantsOptions {
  /** Effective mutants to keep per task. */
  maxMutants?: number;
  /** Candidates tried per task; bounds the probe's cost on long solutions. */
  maxCandidates?: number;
  /** Wall-clock limit for the probe run that tries all candidates at once. */
  probeTimeoutMs?: number;
  /** Per-call limit for one mutant inside the probe; a mutant past it "differs by timeout". */
  callTimeoutMs?: number;
}

export interface TaskMutants {
  taskId: string;
  /** Candidates generated before the cap. */
  generated: number;
  /** Candidates the probe ran. */
  tried: number;
  /** Did not compile. */
  invalid: number;
  /** Compiled, and agreed with the reference on every call the hidden tests make. */
  equivalent: number;
  /**
   * Compiled, agreed with the reference on the calls it ran, and was not run on the rest: the
   * candidates before it already held the mutants kept (the probe's `needed`).
   */
  unneeded: number;
  effective: EffectiveMutant[];
  /** Why none could be made, when `effective` is empty. */
  reason?: string;
}

/** Values first: a mutant that returns a wrong value is the strongest test of the judge, and a timeout is the slowest. */
const DIFFERENCE_RANK: Record<EffectiveMutant["difference"], number> = { value: 0, exception: 1, timeout: 2 };

/**
 * Picks up to `count` effective mutants: best kind of difference first, then spread across
 * operators. Deterministic for the same candidates and verdicts.
 */
export function selectMutants(effective: readonly EffectiveMutant[], count: number): EffectiveMutant[] {
  const ranked = [...effective].sort((a, b) => DIFFERENCE_RANK[a.difference] - DIFFERENCE_RANK[b.difference]);
  const chosen: EffectiveMutant[] = [];
  const usedOperators = new Set<MutationOperator>();
  for (const mutant of ranked) {
    if (chosen.length >= count) break;
    if (usedOperators.has(mutant.operator)) continue;
    chosen.push(mutant);
    usedOperators.add(mutant.operator);
  }
  for (const mutant of ranked) {
    if (chosen.length >= count) break;
    if (!chosen.includes(mutant)) chosen.push(mutant);
  }
  return chosen;
}

const MUTANT_DEFAULTS: Required<FindMutantsOptions> = {
  maxMutants: 3,
  maxCandidates: 16,
  probeTimeoutMs: 15_000,
  callTimeoutMs: 250,
};

/**
 * The shared probe `findEffectiveMutants` runs first, as a program and its wall-clock limit, so a
 * caller can run many tasks' probes together and hand the verdicts back; null when the task has
 * no mutation site.
 */
export function planProbe(
  task: BenchmarkTask,
  options: FindMutantsOptions = {},
): { code: string; timeoutMs: number } | null {
  const { maxMutants, maxCandidates, probeTimeoutMs, callTimeoutMs } = { ...MUTANT_DEFAULTS, ...options };
  const tried = interleaveByOperator(generateMutantCandidates(task.canonical_solution)).slice(0, maxCandidates);
  if (tried.length === 0) return null;
  return { code: buildProbeProgram(task, tried, callTimeoutMs / 1000, maxMutants), timeoutMs: probeTimeoutMs };
}

/**
 * Generates mutants of the task's reference solution and keeps those that observably change
 * behaviour: on the same calls the hidden tests make, they return a different value, raise, or
 * hang. That is decided by running reference and mutants side by side in the sandbox, without
 * consulting the tests' assertions, so `verifyDataset` can then ask the real judge about them
 * and a mutant it lets through is a genuine false pass.
 */
export async function findEffectiveMutants(
  task: BenchmarkTask,
  sandbox: Sandbox,
  options: FindMutantsOptions = {},
  /** The verdicts of the shared probe (`planProbe`'s program), when the caller already ran it. */
  probed?: ProbeVerdict[],
): Promise<TaskMutants> {
  const { maxMutants, maxCandidates, probeTimeoutMs, callTimeoutMs } = { ...MUTANT_DEFAULTS, ...options };
  const all = generateMutantCandidates(task.canonical_solution);
  const tried = interleaveByOperator(all).slice(0, maxCandidates);
  const base = { taskId: task.task_id, generated: all.length, tried: tried.length };
  if (tried.length === 0) {
    const reason = "no mutation site in the reference solution";
    return { ...base, invalid: 0, equivalent: 0, unneeded: 0, effective: [], reason };
  }

  const limits = { timeoutMs: probeTimeoutMs, callTimeoutMs, keep: maxMutants };
  let verdicts = probed ?? (await probe(task, tried, sandbox, limits));
  if (verdicts === null) {
    // One runaway mutant (memory, an uninterruptible loop) sank the shared probe: try each alone,
    // so the others still count. A lone probe that dies that way is itself a behaviour change.
    verdicts = [];
    for (const candidate of tried) {
      const single = await probe(task, [candidate], sandbox, { ...limits, timeoutMs: Math.min(probeTimeoutMs, 5_000) });
      verdicts.push(
        single?.[0] ?? {
          id: candidate.id,
          valid: true,
          difference: "timeout",
          detail: "probe run did not finish",
          needed: true,
        },
      );
    }
  }

  const byId = new Map(verdicts.map((verdict) => [verdict.id, verdict]));
  const effective: EffectiveMutant[] = [];
  let invalid = 0;
  let equivalent = 0;
  let unneeded = 0;
  for (const candidate of tried) {
    const verdict = byId.get(candidate.id);
    if (verdict === undefined || !verdict.valid) {
      invalid += 1;
    } else if (verdict.difference === null) {
      if (verdict.needed) equivalent += 1;
      else unneeded += 1;
    } else {
      effective.push({ ...candidate, difference: verdict.difference, detail: verdict.detail });
    }
  }
  const selected = selectMutants(effective, maxMutants);
  return {
    ...base,
    invalid,
    equivalent,
    unneeded,
    effective: selected,
    ...(selected.length === 0
      ? { reason: `none of ${tried.length} candidates changed behaviour on the hidden tests` }
      : {}),
  };
}

async function probe(
  task: BenchmarkTask,
  candidates: readonly MutantCandidate[],
  sandbox: Sandbox,
  { timeoutMs, callTimeoutMs, keep }: { timeoutMs: number; callTimeoutMs: number; keep: number },
): Promise<ProbeVerdict[] | null> {
  const code = buildProbeProgram(task, candidates, callTimeoutMs / 1000, keep);
  const result = await sandbox.run({ language: "python", code, timeoutMs });
  return parseProbeOutput(result.stdout);
}
