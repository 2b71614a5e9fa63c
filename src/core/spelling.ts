// The "did you mean" of every message that refuses a name: settings, input fields, tool arguments.

/** ` (did you mean maxAttempts?)` for the known name closest in spelling to `key`, or "" when none is close. */
export function didYouMean(key: string, known: readonly string[]): string {
  const closest = known
    .map((candidate) => ({ candidate, distance: editDistance(key.toLowerCase(), candidate.toLowerCase()) }))
    .sort((a, b) => a.distance - b.distance)[0];
  return closest && closest.distance <= Math.max(2, key.length / 3) ? ` (did you mean ${closest.candidate}?)` : "";
}

/** Levenshtein distance, for the "did you mean" hint. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
