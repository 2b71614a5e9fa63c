import type { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/**
 * The test functions a suite registers its cases with, given by the test file that runs it:
 * `{ describe, it, expect, beforeAll, afterAll, afterEach }` from vitest. The suites load no test
 * framework of their own, so `selfheal/testing` adds none to a project (the types are vitest's).
 */
export interface TestRunner {
  describe: typeof describe;
  it: typeof it;
  expect: typeof expect;
  beforeAll: typeof beforeAll;
  afterAll: typeof afterAll;
  afterEach: typeof afterEach;
}
