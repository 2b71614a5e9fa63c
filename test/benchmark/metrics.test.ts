import { describe, expect, it } from "vitest";
import {
  passAtK,
  solvedAfterSteps,
  solvedAtEqualTokens,
  solvedWithinTokens,
  tokenGrid,
} from "../../src/benchmark/metrics.js";

/** C(n, k) as a float, for a brute-force check of the estimator on small numbers. */
const choose = (n: number, k: number): number => (k < 0 || k > n ? 0 : k === 0 ? 1 : (choose(n - 1, k - 1) * n) / k);

describe("passAtK", () => {
  it("equals 1 - C(n-c, k) / C(n, k), the estimator of Chen et al.", () => {
    for (const [n, c, k] of [
      [10, 3, 1],
      [10, 3, 5],
      [20, 1, 10],
      [5, 0, 2],
      [7, 7, 3],
      [200, 13, 100],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 10);
    }
  });

  it("is the plain fraction correct at k = 1 and 1 when too few samples are wrong to fill k", () => {
    expect(passAtK(8, 2, 1)).toBeCloseTo(0.25, 12);
    expect(passAtK(4, 3, 2)).toBe(1);
  });

  it("rejects counts that cannot be", () => {
    expect(() => passAtK(3, 4, 1)).toThrow(RangeError);
    expect(() => passAtK(3, 1, 4)).toThrow(RangeError);
  });
});

describe("solved curves", () => {
  const tasks = [
    [
      { tokens: 100, handoverPassed: false },
      { tokens: 150, handoverPassed: true },
    ],
    [{ tokens: 300, handoverPassed: true }],
    [{ tokens: 50, handoverPassed: false }],
  ];

  it("counts a task by its handover after k steps, keeping the last one when it stopped earlier", () => {
    expect([1, 2, 3].map((steps) => solvedAfterSteps(tasks, steps))).toEqual([1, 2, 2]);
  });

  it("counts a task within a token budget only when the passing handover fits it", () => {
    expect([99, 249, 250, 300].map((budget) => solvedWithinTokens(tasks, budget))).toEqual([0, 0, 1, 2]);
  });

  it("gives resampling, per task, the tokens repair spent on it, and always one sample", () => {
    const samples = [
      [
        { tokens: 100, handoverPassed: false },
        { tokens: 100, handoverPassed: true },
        { tokens: 100, handoverPassed: true },
      ],
      [{ tokens: 400, handoverPassed: true }],
      [
        { tokens: 50, handoverPassed: false },
        { tokens: 50, handoverPassed: true },
      ],
    ];
    // Task 1: 200 of 250 fit, the second sample passes. Task 2: one sample, over budget, still counted. Task 3: 50 allowed.
    expect(solvedAtEqualTokens(tasks, samples)).toBe(2);
  });

  it("spaces the token grid evenly up to the largest spend", () => {
    const grid = tokenGrid(1000, 5);
    expect(grid[0]).toBe(0);
    expect(grid.at(-1)).toBe(1000);
    expect(tokenGrid(0)).toEqual([0]);
  });
});
