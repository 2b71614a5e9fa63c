import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliCommand, shellWord } from "../../src/cli/invocation.js";
import { scratchDir } from "../helpers/scratch.js";

/** A checkout with its bin, and a folder for PATH that may link to it. */
function checkout() {
  const root = scratchDir("invocation");
  mkdirSync(join(root, "bin"));
  mkdirSync(join(root, "on-path"));
  const script = join(root, "bin", "selfheal.js");
  writeFileSync(script, "", { mode: 0o755 });
  return { root, script, onPath: join(root, "on-path") };
}

describe("cliCommand: the words that start selfheal where the user is", () => {
  it("is npx selfheal after npx or npm exec", () => {
    const { root, script } = checkout();
    expect(cliCommand({ env: { npm_command: "exec", npm_lifecycle_event: "npx" }, script, cwd: root })).toBe(
      "npx selfheal",
    );
  });

  it("is the checkout's npm script after any of its scripts (npm run selfheal --, npm run demo)", () => {
    const { root, script } = checkout();
    for (const [command, event] of [
      ["run", "selfheal"],
      ["run", "demo"],
      ["run-script", "selfheal"],
    ])
      expect(
        cliCommand({
          env: { npm_command: command, npm_lifecycle_event: event, npm_package_name: "selfheal" },
          script,
          cwd: root,
        }),
      ).toBe("npm run selfheal --");
  });

  it("is npx selfheal after a script of a project that depends on selfheal", () => {
    const { root, script } = checkout();
    expect(
      cliCommand({
        env: { npm_command: "run", npm_lifecycle_event: "fix", npm_package_name: "my-app" },
        script,
        cwd: root,
      }),
    ).toBe("npx selfheal");
  });

  it("is selfheal when selfheal on PATH is this very script (an install, npm link)", () => {
    const { root, script, onPath } = checkout();
    symlinkSync(script, join(onPath, "selfheal"));
    expect(cliCommand({ env: { PATH: `/nonexistent:${onPath}` }, script, cwd: root })).toBe("selfheal");
  });

  it("is node and the script's path when selfheal on PATH is another install, or none", () => {
    const { root, script, onPath } = checkout();
    const other = join(root, "other.js");
    writeFileSync(other, "", { mode: 0o755 });
    symlinkSync(other, join(onPath, "selfheal"));
    expect(cliCommand({ env: { PATH: onPath }, script, cwd: root })).toBe("node bin/selfheal.js");
    expect(cliCommand({ env: {}, script, cwd: join(root, "bin") })).toBe("node ./selfheal.js");
    expect(cliCommand({ env: {}, script, cwd: scratchDir("elsewhere") })).toBe(`node ${script}`);
  });

  it("quotes a path only when the shell needs it", () => {
    expect(shellWord("/home/me/src/selfheal/bin/selfheal.js")).toBe("/home/me/src/selfheal/bin/selfheal.js");
    expect(shellWord("/home/me/my runs/it's.db")).toBe(`'/home/me/my runs/it'\\''s.db'`);
    const root = scratchDir("with space");
    const spaced = join(root, "a b", "selfheal.js");
    expect(cliCommand({ env: {}, script: spaced, cwd: scratchDir("elsewhere") })).toBe(`node '${spaced}'`);
  });
});
