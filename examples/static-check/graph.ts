import { createAgent, studioDeclaration } from "../../src/index.js";
import { staticCheck } from "./index.js";

/** For langgraph.json: Studio draws the `staticCheck` node between the writers and the approval gate. */
export const graph = createAgent({ verifiers: [staticCheck()] }, studioDeclaration());
