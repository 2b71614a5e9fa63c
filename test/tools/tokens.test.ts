import { describe, expect, it } from "vitest";

import { COUNT_PIECE_CHARS, countTokens } from "../../src/tools/tokens.js";

// The expected counts were taken from js-tiktoken's o200k_base, which counted for selfheal before.
describe("countTokens", () => {
  it("counts special tokens in a program's output as text, as before", async () => {
    expect(await countTokens("hello <|endoftext|> world")).toBe(9);
  });

  it("counts a long multi-line text in pieces to the same total as at once", async () => {
    const line = (i: number) =>
      `  File "main.py", line ${i}, in <module>\n    total = compute(values[${i}])  # ünïcödé 漢字\n`;
    const text = Array.from({ length: 120 }, (_, i) => line(i)).join("");
    expect(text.length).toBeGreaterThan(2 * COUNT_PIECE_CHARS);
    expect(await countTokens(text)).toBe(3840);
  });

  it("counts 100 000 characters without a space or newline (js-tiktoken took minutes: merging is quadratic)", async () => {
    // Eight x's are one token; pieces of 4096 keep that, as one count of the whole would.
    expect(await countTokens("x".repeat(100_000))).toBe(12_500);
  });
});
