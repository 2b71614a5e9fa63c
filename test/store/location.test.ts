import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveStoreLocation } from "../../src/store/index.js";

describe("where the default run store is", () => {
  const scratch = mkdtempSync(join(tmpdir(), "selfheal-location-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("is the nearest .selfheal/ found walking up from the working directory, as git finds .git", () => {
    const project = join(scratch, "project");
    mkdirSync(join(project, ".selfheal"), { recursive: true });
    mkdirSync(join(project, "src", "deep"), { recursive: true });
    expect(resolveStoreLocation({}, {}, join(project, "src", "deep"))).toEqual({
      kind: "sqlite",
      path: join(project, ".selfheal", "checkpoints.db"),
    });
  });

  it("is in the working directory itself when no folder above has a .selfheal/", () => {
    const lonely = join(scratch, "lonely", "sub");
    mkdirSync(lonely, { recursive: true });
    expect(resolveStoreLocation({}, {}, lonely)).toEqual({
      kind: "sqlite",
      path: join(lonely, ".selfheal", "checkpoints.db"),
    });
  });

  it("skips a .selfheal that is a file, not a folder", () => {
    const outer = join(scratch, "outer");
    const inner = join(outer, "inner");
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(outer, ".selfheal"), "not a store");
    expect(resolveStoreLocation({}, {}, inner)).toEqual({
      kind: "sqlite",
      path: join(inner, ".selfheal", "checkpoints.db"),
    });
  });

  it("gives way to $SELFHEAL_DB and --db, relative to the working directory", () => {
    const project = join(scratch, "with-store");
    mkdirSync(join(project, ".selfheal"), { recursive: true });
    const sub = join(project, "sub");
    mkdirSync(sub);
    expect(resolveStoreLocation({}, { SELFHEAL_DB: "env.db" }, sub)).toEqual({
      kind: "sqlite",
      path: join(sub, "env.db"),
    });
    expect(resolveStoreLocation({ db: "flag.db" }, { SELFHEAL_DB: "env.db" }, sub)).toEqual({
      kind: "sqlite",
      path: join(sub, "flag.db"),
    });
  });
});
