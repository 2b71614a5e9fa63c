import { marked, type Token, type Tokens } from "marked";
import type { Language } from "../sandbox/types.js";

/** `choice` says which block was taken and why, when the reply had more than one candidate. */
export type Extraction =
  | { code: string; problem?: undefined; choice?: string }
  | { code: null; problem: string; choice?: undefined };

const LANGUAGE_TAGS: Record<Language, string[]> = {
  python: ["python", "py", "python3", "py3"],
  javascript: ["javascript", "js", "node", "nodejs", "mjs", "cjs"],
};

interface FencedBlock {
  tag: string;
  body: string;
}

type MarkdownToken = Token & { tokens?: Token[]; items?: { tokens: Token[] }[] };

/**
 * Fenced blocks as CommonMark reads them (marked's lexer): a fence under a list item loses the
 * item's indentation, and a missing closing fence runs to the end. Indented code blocks are left
 * out: bare code with a blank line before an indented body would otherwise be cut in half.
 */
function findFencedBlocks(reply: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const walk = (tokens: MarkdownToken[]) => {
    for (const token of tokens) {
      if (token.type === "code" && (token as Tokens.Code).codeBlockStyle !== "indented") {
        const code = token as Tokens.Code;
        blocks.push({ tag: (code.lang ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "", body: code.text });
      }
      if (token.tokens) walk(token.tokens as MarkdownToken[]);
      for (const item of token.items ?? []) walk(item.tokens as MarkdownToken[]);
    }
  };
  walk(marked.lexer(reply) as MarkdownToken[]);
  return blocks.filter((block) => block.body.trim().length > 0);
}

const escapeName = (name: string) => name.replace(/[$]/g, "\\$");

/** Whether a block defines `name` as a function or class, in the task's language. */
function defines(block: FencedBlock, name: string, language: Language): boolean {
  const n = escapeName(name);
  const pattern =
    language === "python"
      ? new RegExp(`^\\s*(async\\s+)?(def|class)\\s+${n}\\b`, "m")
      : new RegExp(`(function\\s*\\*?\\s*${n}\\b|(const|let|var)\\s+${n}\\s*=|class\\s+${n}\\b)`, "m");
  return pattern.test(block.body);
}

const ANY_DEFINITION: Record<Language, RegExp> = {
  python: /^\s*(async\s+)?(def|class)\s+\w+/m,
  javascript: /(function\b|=>|^\s*class\s+\w+)/m,
};

const IMPORT_LINE: Record<Language, RegExp> = {
  python: /^\s*(import\s+\S|from\s+\S+\s+import\s|#)/,
  javascript: /^\s*(import\s|(const|let|var)\s+.+=\s*require\(|\/\/)/,
};

/** A block of imports (and comments) only: the first half of an answer split in two. */
function onlyImports(block: FencedBlock, language: Language): boolean {
  const lines = block.body.split("\n").filter((line) => line.trim().length > 0);
  return lines.length > 0 && lines.every((line) => IMPORT_LINE[language].test(line));
}

interface Choice {
  index: number;
  why: string;
}

/**
 * The answer among several blocks: the one that defines the most of the task's names, else one
 * that defines any function, else the longest. Ties go to the last block: replies that work
 * examples first ("analogical" prompting) give their answer last, and a test block after the
 * answer defines none of the names.
 */
function chooseBlock(blocks: FencedBlock[], language: Language, names: string[]): Choice {
  const last = (score: (block: FencedBlock) => number): number => {
    let best = -1;
    let bestScore = 0;
    blocks.forEach((block, index) => {
      const value = score(block);
      if (value > 0 && value >= bestScore) {
        best = index;
        bestScore = value;
      }
    });
    return best;
  };
  if (names.length > 0) {
    const index = last((block) => names.filter((name) => defines(block, name, language)).length);
    if (index >= 0) {
      const found = names.filter((name) => defines(blocks[index] as FencedBlock, name, language));
      return { index, why: `it is the last block that defines ${found.map((name) => `\`${name}\``).join(", ")}` };
    }
  }
  const defining = last((block) => (ANY_DEFINITION[language].test(block.body) ? 1 : 0));
  if (defining >= 0) return { index: defining, why: "it is the last block that defines a function or class" };
  const index = blocks.reduce(
    (best, block, i) => (block.body.length > (blocks[best] as FencedBlock).body.length ? i : best),
    0,
  );
  return { index, why: "no block defines a function, so the longest" };
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

/** The other supported language a block is tagged with, if any: `python` for a ```py block. */
function foreignLanguageOf(block: FencedBlock, language: Language): Language | undefined {
  return (Object.keys(LANGUAGE_TAGS) as Language[]).find(
    (other) => other !== language && LANGUAGE_TAGS[other].includes(block.tag),
  );
}

/**
 * Pulls the program out of a model reply. Prefers blocks tagged with the language, then untagged
 * blocks (they count as the task's language), then any block; among those it takes the block that
 * defines the task's `names` (see `chooseBlock`); a reply with no
 * fence is used whole when it reads as code. A reply whose only program is in the other supported
 * language is a problem for the fixer: run under the task's interpreter it would fail with a
 * SyntaxError that hides the real mistake.
 */
export function extractCode(reply: string, language: Language, names: string[] = []): Extraction {
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
    const candidates = tagged.length > 0 ? tagged : untagged.length > 0 ? untagged : blocks;
    const choice = chooseBlock(candidates, language, names);
    // An answer split in two (imports in one block, the function in the next) is run as one.
    let first = choice.index;
    while (first > 0 && onlyImports(candidates[first - 1] as FencedBlock, language)) first -= 1;
    const taken = candidates.slice(first, choice.index + 1);
    const code = `${taken.map((block) => block.body.replace(/\s+$/, "")).join("\n\n")}\n`;
    if (candidates.length === 1) return { code };
    const merged = taken.length > 1 ? `, with the ${taken.length - 1} imports-only block(s) before it` : "";
    return {
      code,
      choice: `Took block ${choice.index + 1} of ${candidates.length}${merged}: ${choice.why}.`,
    };
  }
  const bare = reply.trim();
  if (bare.length > 0 && looksLikeCode(bare, language)) return { code: `${bare}\n` };
  if (bare.length === 0) return { code: null, problem: "The model's reply was empty: no program to run." };
  return {
    code: null,
    problem: `The model's reply contained no ${language} code (no fenced block and no code-like text). Reply with the complete program in one fenced \`\`\`${language} block.`,
  };
}
