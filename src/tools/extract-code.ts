import type { Language } from "../sandbox/types.js";

export type Extraction = { code: string; problem?: undefined } | { code: null; problem: string };

const LANGUAGE_TAGS: Record<Language, string[]> = {
  python: ["python", "py", "python3", "py3"],
  javascript: ["javascript", "js", "node", "nodejs", "mjs", "cjs"],
};

interface FencedBlock {
  tag: string;
  body: string;
}

/** Fences of three or more backticks or tildes, as CommonMark allows; a missing closing fence runs to the end. */
function findFencedBlocks(reply: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const lines = reply.split(/\r?\n/);
  let open: { fence: string; tag: string; body: string[] } | null = null;
  for (const line of lines) {
    if (open) {
      const closing = line.trim();
      if (closing.startsWith(open.fence) && /^[`~]+$/.test(closing)) {
        blocks.push({ tag: open.tag, body: open.body.join("\n") });
        open = null;
      } else {
        open.body.push(line);
      }
      continue;
    }
    const opening = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(line);
    if (opening?.[1]) open = { fence: opening[1], tag: (opening[2] ?? "").toLowerCase(), body: [] };
  }
  if (open) blocks.push({ tag: open.tag, body: open.body.join("\n") });
  return blocks.filter((block) => block.body.trim().length > 0);
}

const CODE_HINTS: Record<Language, RegExp> = {
  python:
    /^\s*(def |class |import |from \S+ import |print\(|if __name__|for .+:|while .+:|return\b|[A-Za-z_][\w.]*\s*=\s*\S|assert )/m,
  javascript:
    /^\s*(function\b|const |let |var |class |import |export |console\.log\(|module\.exports|require\(|for \(|while \(|if \(|return\b)/m,
};

/** Prose with a stray keyword is not a program: most non-blank lines must look like code. */
function looksLikeCode(text: string, language: Language): boolean {
  const lines = text.split("\n").filter((line) => line.trim().length > 0);
  if (lines.length === 0 || !CODE_HINTS[language].test(text)) return false;
  const prose = lines.filter((line) => /^[A-Z][a-z]+(\s+[a-z,']+){4,}[.!?:]?$/.test(line.trim()));
  return prose.length / lines.length < 0.5;
}

const longest = (blocks: FencedBlock[]) =>
  blocks.reduce((best, block) => (block.body.length > best.body.length ? block : best));

/** The other supported language a block is tagged with, if any: `python` for a ```py block. */
function foreignLanguageOf(block: FencedBlock, language: Language): Language | undefined {
  return (Object.keys(LANGUAGE_TAGS) as Language[]).find(
    (other) => other !== language && LANGUAGE_TAGS[other].includes(block.tag),
  );
}

/**
 * Pulls the program out of a model reply. Prefers a block tagged with the language, then any
 * untagged block (it counts as the task's language), then the longest block; a reply with no
 * fence is used whole when it reads as code. A reply whose only program is in the other supported
 * language is a problem for the fixer: run under the task's interpreter it would fail with a
 * SyntaxError that hides the real mistake.
 */
export function extractCode(reply: string, language: Language): Extraction {
  const blocks = findFencedBlocks(reply);
  if (blocks.length > 0) {
    const tagged = blocks.filter((block) => LANGUAGE_TAGS[language].includes(block.tag));
    const untagged = blocks.filter((block) => block.tag === "");
    if (tagged.length === 0 && untagged.length === 0) {
      const foreign = blocks.map((block) => foreignLanguageOf(block, language)).find((other) => other !== undefined);
      if (foreign) {
        return {
          code: null,
          problem: `The reply has a ${foreign} block but the task is ${language}: reply with the complete ${language} program in one fenced \`\`\`${language} block.`,
        };
      }
    }
    const chosen = longest(tagged.length > 0 ? tagged : untagged.length > 0 ? untagged : blocks);
    return { code: `${chosen.body.replace(/\s+$/, "")}\n` };
  }
  const bare = reply.trim();
  if (bare.length > 0 && looksLikeCode(bare, language)) return { code: `${bare}\n` };
  if (bare.length === 0) return { code: null, problem: "The model's reply was empty: no program to run." };
  return {
    code: null,
    problem: `The model's reply contained no ${language} code (no fenced block and no code-like text). Reply with the complete program in one fenced \`\`\`${language} block.`,
  };
}
