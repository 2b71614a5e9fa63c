/**
 * Errors thrown by test code that a node calls, such as a scripted model's reply function: the
 * node catches them and the run ends as `model_error`, which a test may even expect. They are
 * recorded here and rethrown after the test (test/helpers/setup.ts), so such a test fails with the
 * callback's own message.
 */
const failures: unknown[] = [];

/** `callback`, with whatever it throws recorded before the caller sees it. */
export function recordingFailures<A extends unknown[], R>(callback: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      return callback(...args);
    } catch (error) {
      failures.push(error);
      throw error;
    }
  };
}

/** Throws what callbacks threw since the last call, the first one as itself. */
export function rethrowCallbackFailures(): void {
  const thrown = failures.splice(0);
  if (thrown.length === 0) return;
  const [first] = thrown;
  if (first instanceof Error && thrown.length > 1) {
    first.message = `${first.message}\n(and ${thrown.length - 1} more failure(s) in test callbacks after it)`;
  }
  throw first;
}
