#!/usr/bin/env node
// The CLI ships as TypeScript and runs through tsx's loader, so there is no build step to forget.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/bin.ts");
