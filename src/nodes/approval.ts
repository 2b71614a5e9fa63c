import { interrupt } from "@langchain/langgraph";
import { z } from "zod";
import { blockExecution } from "../core/state.js";
import type { Language } from "../sandbox/types.js";
import type { AgentNode } from "./types.js";

/** The interrupt's payload: what a person sees before the program runs. */
export interface ApprovalRequest {
  kind: "approval";
  attempt: number;
  language: Language;
  code: string;
}

/** What `Command({ resume })` carries back. */
export const ApprovalDecisionSchema = z.discriminatedUnion("action", [
  z.object({ action: z.literal("approve") }),
  z.object({ action: z.literal("reject"), reason: z.string().trim().min(1, "a rejection needs a reason") }),
  z.object({ action: z.literal("edit"), code: z.string().min(1, "edited code must not be empty") }),
]);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/**
 * Pauses before an execution until a person approves, rejects (the reason reaches the fixer like
 * an error) or edits the program. The graph routes through it only with `approval` on.
 */
export const approvalNode: AgentNode = (state) => {
  const attempt = state.attempt + 1;
  const request: ApprovalRequest = { kind: "approval", attempt, language: state.language, code: state.code };
  const decision = ApprovalDecisionSchema.parse(interrupt(request));
  switch (decision.action) {
    case "approve":
      return {};
    case "reject":
      return blockExecution(state, "human", { type: "Rejected", message: decision.reason });
    case "edit":
      return { code: decision.code, draft: { author: "human", tokens: state.draft?.tokens ?? 0, hasCode: true } };
  }
};
